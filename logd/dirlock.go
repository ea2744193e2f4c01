package logd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// ErrDirLocked: the data directory belongs to another running logd.
var ErrDirLocked = errors.New("logd: data directory in use")

// DirLockedError names a data directory another logd holds and, when its
// lock file could be read, that process's id.
type DirLockedError struct {
	Dir string
	PID int // 0 when unknown
}

func (e *DirLockedError) Error() string {
	who := "another logd"
	if e.PID > 0 {
		who = fmt.Sprintf("another logd (pid %d)", e.PID)
	}
	return fmt.Sprintf("logd: data directory %s is in use by %s; one directory serves one logd", e.Dir, who)
}

func (e *DirLockedError) Unwrap() error { return ErrDirLocked }

// lockFileName is the file in the data directory that a running logd
// holds locked; it contains that process's id.
const lockFileName = "LOCK"

// dirLock is the lock a Server holds on its data directory, so two
// servers never write the same files. The operating system drops it
// when the process ends, however it ends.
type dirLock struct{ f *os.File }

// lockDir creates dir if needed, durably (through fsys, as the store
// creates its directories), and locks it, or returns a *DirLockedError
// when another process (or another Server in this one) holds it.
func lockDir(fsys vfs.FS, dir string) (*dirLock, error) {
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		pid := readPID(f)
		f.Close()
		if errors.Is(err, errLockHeld) {
			return nil, &DirLockedError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("logd: locking %s: %w", path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("logd: writing %s: %w", path, err)
	}
	return &dirLock{f}, nil
}

// unlock releases the directory.
func (l *dirLock) unlock() error { return l.f.Close() }

// errLockHeld: lockFile found the file locked by someone else.
var errLockHeld = errors.New("lock held")

// readPID reads the process id a lock file holds, or 0.
func readPID(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return max(pid, 0)
}
