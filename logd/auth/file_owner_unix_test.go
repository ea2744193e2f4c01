//go:build unix

package auth

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSaveKeepsOwner: a users file owned by another user (logd's) keeps
// its owner and group, and mode 0600, when root rewrites it. Root is
// needed to own a file as someone else; the test skips without it.
func TestSaveKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file another user owns")
	}
	const uid, gid = 65534, 65534 // nobody, nogroup
	dir := t.TempDir()
	path := filepath.Join(dir, "users.json")
	if err := Save(path, testUsers(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, testUsers(t)); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Sys().(*syscall.Stat_t); s.Uid != uid || s.Gid != gid {
		t.Fatalf("rewritten by root: owner %d:%d, want %d:%d", s.Uid, s.Gid, uid, gid)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o, want 0600", st.Mode().Perm())
	}

}
