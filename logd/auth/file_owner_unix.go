//go:build unix

package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives tmp the owner and group of the file at path, when
// there is one and they differ: a users file that logd's own user owns,
// rewritten by root (`brokerless logd user add` under sudo), stays
// readable by logd, as vipw and sed -i keep a file's owner. A user who
// cannot give the file away is told so, and nothing is replaced.
func keepOwner(tmp *os.File, path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	tst, err := tmp.Stat()
	if err != nil {
		return err
	}
	want, ok := st.Sys().(*syscall.Stat_t)
	have, ok2 := tst.Sys().(*syscall.Stat_t)
	if !ok || !ok2 || want.Uid == have.Uid && want.Gid == have.Gid {
		return nil
	}
	if err := tmp.Chown(int(want.Uid), int(want.Gid)); err != nil {
		return &FileError{Path: path, Reason: fmt.Sprintf("owned by uid %d gid %d, which the rewritten file cannot be given (%v): run as root or as its owner", want.Uid, want.Gid, err)}
	}
	return nil
}
