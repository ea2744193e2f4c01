package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/logd/auth"
)

// updateUsersFile changes the users file at path as one step with
// respect to every other 'logd user add' and 'logd user remove': under
// an exclusive lock on path+".lock" it loads the file (with create, no
// file yet is an empty one; without, it is an error, before the lock
// file is created), calls change, and, if change returns nil,
// saves the result with auth.Save (a temporary file in the same
// directory, fsynced, renamed over path, the directory fsynced), so a
// reader such as logd at start sees the old file or the new one, never
// part of one.
//
// The lock is on a separate file because the rename replaces path: a
// lock on path itself would stay with the old file, and a writer that
// opened the new one would not wait for it. The lock file (empty, mode
// 0600) stays next to the users file; removing it while another command
// waits for it would let two commands hold "the" lock at once. While
// another command holds the lock, a note goes to warn once and the
// command waits, until ctx ends. A path that is a symlink names the file
// it points to, even one that does not exist yet (see usersFileTarget):
// that file is locked and replaced, or created, and the link stays.
func updateUsersFile(ctx context.Context, warn io.Writer, path string, create bool, change func(*auth.Users) error) error {
	path, err := usersFileTarget(path)
	if err != nil {
		return err
	}
	if !create {
		// No file to change: fail before the lock file is created, so
		// a mistyped path leaves nothing behind.
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	unlock, err := lockUsersFile(ctx, warn, path)
	if err != nil {
		return err
	}
	defer unlock()
	var users *auth.Users
	if create {
		users, err = loadOrNewUsers(path)
	} else {
		users, err = auth.Load(path)
	}
	if err != nil {
		return err
	}
	if err := change(users); err != nil {
		return err
	}
	return auth.Save(path, users)
}

// usersFileTarget is the file path names, through any symlinks, so that
// the lock and the rename are on the file logd reads: a rename over the
// link would replace the link and leave its target as it was, and a
// command naming the target would take another lock.
//
// A path that does not exist yet is taken as it is, its directory
// resolved. A dangling symlink (or a chain of them) names the file at
// its end, as opening it with O_CREAT would: that is where the file is
// created, so that logd, reading the link, reads what was written, and
// the link stays. Each link is read with os.Readlink, a relative one
// relative to its own directory, at most maxUsersFileLinks of them. If
// the directory the last link points into does not exist, that is an
// error naming the link and its target.
func usersFileTarget(path string) (string, error) {
	p := path
	for range maxUsersFileLinks {
		target, err := filepath.EvalSymlinks(p)
		if err == nil {
			return target, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("users file: %w", err)
		}
		// p, or a directory on the way to it, does not exist. Split
		// off the last name without cleaning p: in "link/../name" the
		// ".." is the link target's parent, which EvalSymlinks finds
		// and filepath.Dir would not.
		i := strings.LastIndexByte(p, filepath.Separator)
		dir, name := ".", p
		if i >= 0 {
			dir, name = p[:i+1], p[i+1:]
		}
		rdir, err := filepath.EvalSymlinks(dir)
		if err != nil {
			if p != path && errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("users file %s is a symlink to %s, whose directory does not exist", path, p)
			}
			if errors.Is(err, os.ErrNotExist) {
				return path, nil // saving it fails, saying why
			}
			return "", fmt.Errorf("users file: %w", err)
		}
		p = filepath.Join(rdir, name)
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return p, nil // a new file, or a dangling link's target
		}
		if err != nil {
			return "", fmt.Errorf("users file: %w", err)
		}
		if st.Mode()&os.ModeSymlink == 0 {
			return p, nil // it appeared since EvalSymlinks looked
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("users file: %w", err)
		}
		if filepath.IsAbs(dest) {
			p = dest
		} else {
			p = rdir + string(filepath.Separator) + dest
		}
	}
	return "", fmt.Errorf("users file %s: more than %d symlinks to follow", path, maxUsersFileLinks)
}

// maxUsersFileLinks bounds the dangling symlinks usersFileTarget follows
// (Linux's own bound on a path's symlinks is 40).
const maxUsersFileLinks = 40

// loadOrNewUsers loads a users file, or starts an empty one if there
// is no file yet.
func loadOrNewUsers(path string) (*auth.Users, error) {
	users, err := auth.Load(path)
	if errors.Is(err, os.ErrNotExist) {
		return auth.NewUsers(), nil
	}
	return users, err
}

// A command waiting for a users file's lock tries again after these
// intervals, doubling from the first up to the last: a blocking flock
// could not watch ctx.
const (
	usersLockFirstPoll = time.Millisecond
	usersLockMaxPoll   = 100 * time.Millisecond
)

// lockUsersFile takes an exclusive flock on path+".lock", creating it
// (mode 0600) if needed. unlock releases it.
//
// The lock file is opened with O_NOFOLLOW, and must be a regular file:
// in a directory others can write to, a symlink planted at path+".lock"
// would otherwise have the command create, or open, the file it points
// to. O_NONBLOCK keeps a FIFO planted there from blocking the open; no
// read or write is ever made on the file.
func lockUsersFile(ctx context.Context, warn io.Writer, path string) (unlock func(), err error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
	if err != nil { // ELOOP on Linux for a symlink, EMLINK on FreeBSD
		if st, lerr := os.Lstat(name); lerr == nil && st.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("users file lock: %s is a symlink, not following it: remove it (an empty file is created in its place)", name)
		}
		return nil, fmt.Errorf("users file lock: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file (%v)", name, st.Mode().Type())
		}
		return nil, fmt.Errorf("users file lock: %w", err)
	}
	fd := int(f.Fd())
	poll := usersLockFirstPoll
	warned := false
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("users file lock: flock %s: %w", name, err)
		}
		if !warned && errors.Is(err, unix.EWOULDBLOCK) {
			fmt.Fprintf(warn, "brokerless: waiting for %s: another 'logd user' command is changing %s\n", name, path)
			warned = true
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("users file lock: waiting for %s: %w", name, context.Cause(ctx))
		case <-t.C:
		}
		poll = min(2*poll, usersLockMaxPoll)
	}
}
