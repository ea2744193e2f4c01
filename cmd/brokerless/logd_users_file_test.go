package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/logd/auth"
)

// TestLogdUserChangesSymlinkTarget: given a symlink to the users file,
// 'logd user add' and 'logd user remove' change the file it points to,
// under that file's lock, and leave the link in place. Renaming the new
// file over the link instead would leave logd, reading the target, with
// the old users, and a run naming the target would not wait for one
// naming the link.
func TestLogdUserChangesSymlinkTarget(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "users.json")
	if err := os.Mkdir(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", real, "--user", "alice", "--no-password"); code != exitOK {
		t.Fatalf("add alice: exit %d\n%s", code, errOut)
	}
	link := filepath.Join(dir, "users.json")
	if err := os.Symlink(filepath.Join("real", "users.json"), link); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", link, "--user", "bob", "--no-password"); code != exitOK {
		t.Fatalf("add bob through the link: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "logd", "user", "remove", "--file", link, "--user", "alice"); code != exitOK {
		t.Fatalf("remove alice through the link: exit %d\n%s", code, errOut)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symlink: %v, %v", link, st.Mode(), err)
	}
	users, err := auth.Load(real)
	if err != nil {
		t.Fatal(err)
	}
	_, alice := users.Lookup("alice")
	_, bob := users.Lookup("bob")
	if alice || !bob {
		t.Fatalf("the link's target holds alice %v, bob %v; want bob only", alice, bob)
	}
	if _, err := os.Lstat(link + ".lock"); !os.IsNotExist(err) {
		t.Errorf("a lock next to the link (%v): runs naming the target would not wait for it", err)
	}
}

// TestLogdUserRemoveNoFileLeavesNoLock: 'logd user remove' on a users
// file that does not exist (a mistyped --file) fails, saying so, and
// leaves nothing behind, no FILE.lock either.
func TestLogdUserRemoveNoFileLeavesNoLock(t *testing.T) {
	file := filepath.Join(t.TempDir(), "no-such-users.json")
	code, _, errOut := runCLI(t, "", "logd", "user", "remove", "--file", file, "--user", "bob")
	if code != exitFailure || !strings.Contains(errOut, "no such file") {
		t.Fatalf("exit %d, want %d saying there is no file:\n%s", code, exitFailure, errOut)
	}
	if _, err := os.Lstat(file + ".lock"); !os.IsNotExist(err) {
		t.Fatalf("%s.lock left behind: %v", file, err)
	}
}

// TestLogdUserAddCreatesDanglingSymlinkTarget: 'logd user add' given a
// symlink whose target does not exist yet (here a chain of two, the
// second relative and through a directory symlink then "..") creates
// the file at the end of the chain, locks it there, and leaves the
// links, so logd, reading the first link, reads what was written.
// Before, the rename replaced the first link with a regular file, the
// target stayed missing, and the lock was next to the link, not taken
// by runs naming the target.
func TestLogdUserAddCreatesDanglingSymlinkTarget(t *testing.T) {
	dir := realTempDir(t)
	for _, d := range []string{"real", filepath.Join("other", "deep")} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "users.json")
	hop := filepath.Join(dir, "hop.json")
	target := filepath.Join(dir, "real", "users.json")
	for _, l := range [][2]string{
		{filepath.Join("other", "deep"), filepath.Join(dir, "via")},
		// via/.. is other, other/.. is dir: cleaned lexically it
		// would be dir's parent.
		{strings.Join([]string{"via", "..", "..", "real", "users.json"}, string(filepath.Separator)), hop},
		{hop, link},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", link, "--user", "alice", "--no-password"); code != exitOK {
		t.Fatalf("add alice through the dangling link: exit %d\n%s", code, errOut)
	}
	for _, l := range []string{link, hop} {
		if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink: %v", l, err)
		}
	}
	if st, err := os.Lstat(target); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, %v; want a regular file, mode 0600", target, st, err)
	}
	if code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", target, "--user", "bob", "--no-password"); code != exitOK {
		t.Fatalf("add bob through the target: exit %d\n%s", code, errOut)
	}
	users, err := auth.Load(link) // what logd --users LINK reads
	if err != nil {
		t.Fatal(err)
	}
	_, alice := users.Lookup("alice")
	_, bob := users.Lookup("bob")
	if !alice || !bob {
		t.Fatalf("logd reading the link finds alice %v, bob %v; want both", alice, bob)
	}
	if _, err := os.Lstat(target + ".lock"); err != nil {
		t.Errorf("no lock next to the target: %v", err)
	}
	for _, l := range []string{link, hop} {
		if _, err := os.Lstat(l + ".lock"); !os.IsNotExist(err) {
			t.Errorf("a lock next to the link %s (%v): runs naming the target would not wait for it", l, err)
		}
	}
}

// TestLogdUserAddDanglingSymlinkNoDir: a dangling symlink into a
// directory that does not exist is refused, naming the link and its
// target, and nothing is written: the link stays a link.
func TestLogdUserAddDanglingSymlinkNoDir(t *testing.T) {
	dir := realTempDir(t)
	link := filepath.Join(dir, "users.json")
	if err := os.Symlink(filepath.Join("missing", "users.json"), link); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", link, "--user", "alice", "--no-password")
	want := link + " is a symlink to " + filepath.Join(dir, "missing", "users.json")
	if code != exitFailure || !strings.Contains(errOut, want) || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("exit %d, want %d saying %q, whose directory does not exist:\n%s", code, exitFailure, want, errOut)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symlink: %v", link, err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 {
		t.Fatalf("%s holds %v (%v); want the link only", dir, ents, err)
	}
}

// TestLogdUsersFileLockNotFollowed: a symlink planted at FILE.lock (to a
// file that does not exist, or to one that does) is refused with an
// error naming it, and not followed: its target is neither created nor
// opened, and the users file is not written. A FIFO there is refused
// too, without blocking.
func TestLogdUsersFileLockNotFollowed(t *testing.T) {
	dir := realTempDir(t)
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, to, want string }{
		{"dangling", filepath.Join(dir, "planted"), "is a symlink"},
		{"existing", existing, "is a symlink"},
		{"fifo", "", "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".json")
			var err error
			if tc.to != "" {
				err = os.Symlink(tc.to, file+".lock")
			} else {
				err = unix.Mkfifo(file+".lock", 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", file, "--user", "alice", "--no-password")
			if code != exitFailure || !strings.Contains(errOut, file+".lock") || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want %d saying %s.lock %s:\n%s", code, exitFailure, file, tc.want, errOut)
			}
			if _, err := os.Lstat(file); !os.IsNotExist(err) {
				t.Errorf("%s written without the lock: %v", file, err)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(dir, "planted")); !os.IsNotExist(err) {
		t.Errorf("the planted link's target was created: %v", err)
	}
	if st, err := os.Stat(existing); err != nil || st.Mode().Perm() != 0o644 || st.Size() != 4 {
		t.Errorf("the planted link's existing target changed: %v, %v", st, err)
	}
}

// realTempDir is t.TempDir() through any symlinks (macOS's /var), so
// that paths in the command's messages are the ones a test builds.
func realTempDir(t *testing.T) string {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
