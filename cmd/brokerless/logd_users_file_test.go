package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
