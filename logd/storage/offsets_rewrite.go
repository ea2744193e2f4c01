package storage

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// The offsets log's rewrite runs in the background, as Kafka compacts
// __consumer_offsets, so that commits do not wait for the whole live
// set to be written and fsynced (up to MaxOffsetBytes):
//
//  1. Under o.mu, the commit or expiry that takes the file to its
//     threshold copies the live offsets (not encoding nor sorting
//     them) and starts the rewrite; from then on every record written
//     to the log is also kept in o.pending.
//  2. Without o.mu, the rewrite encodes the copy as one commit record
//     per group into offsets.log.tmp and fsyncs it. Commits go on
//     meanwhile, to the old file.
//  3. Under o.mu, it appends o.pending (the records written since the
//     copy, in their order) to offsets.log.tmp, fsyncs it, renames it
//     over offsets.log and writes to it from then on; then it syncs the
//     directory. If that sync fails, the next write syncs it before
//     its record is acknowledged.
//
// pending is bounded: once more is written during a rewrite than the
// copy holds (or offsetsMinFile, if more), the rewrite is overtaken: it
// would not shrink the file by much, so pending is dropped and the
// rewrite ends with errRewriteOvertaken, leaving the old file, which
// holds every record, in use. A rewrite whose file write stalls thus
// holds at most that much memory however many commits go on.
//
// Until the rename the old file holds every acknowledged record, and
// Open removes a leftover offsets.log.tmp; after it, the new file holds
// the copy plus every record written since, fsynced before the rename:
// a crash at any point loses no acknowledged commit. A failed rewrite
// is logged and leaves the old file in use; the next try waits for the
// file to double. Close waits for a running rewrite, which then drops
// its file. At most one rewrite runs at a time; the file stays within
// max(offsetsMinFile, 2× the live records) plus what is written while a
// rewrite runs.

// snapGroup is a group as a rewrite copies it: its offsets unsorted.
type snapGroup struct {
	name string
	at   int64
	offs []GroupOffset
}

// maybeRewrite starts a rewrite of the file once it has reached twice
// what the rewrite writes (live) and offsetsMinFile, unless one runs.
// o.mu is held.
func (o *OffsetStore) maybeRewrite() error {
	if o.rewriting || o.closed || o.size < max(offsetsMinFile, 2*o.live, o.rewriteAt) {
		return nil
	}
	o.startRewrite()
	return nil
}

// startRewrite copies the live offsets and starts the rewrite of the
// file in the background. o.mu is held.
func (o *OffsetStore) startRewrite() {
	snap := make([]snapGroup, 0, len(o.groups))
	for name, g := range o.groups {
		offs := make([]GroupOffset, 0, len(g.offs))
		for _, x := range g.offs {
			offs = append(offs, x)
		}
		snap = append(snap, snapGroup{name, g.at, offs})
	}
	// If the rewrite fails, the next try waits for the file to double.
	o.rewriteAt = 2 * o.size
	o.rewriting, o.pending, o.overtaken = true, nil, false
	live := o.live
	o.pendingMax = max(offsetsMinFile, live)
	o.rewrites.Add(1)
	go func() {
		defer o.rewrites.Done()
		o.rewrite(snap, live)
	}()
}

// errRewriteOvertaken ends a rewrite during which more was written than
// pendingMax.
var errRewriteOvertaken = errors.New("storage: more offsets were committed during the offsets log's rewrite than it copied")

// keepPending keeps rec, just written during a rewrite, for the rewrite
// to append, unless pendingMax is passed (the rewrite is then
// overtaken). o.mu is held.
func (o *OffsetStore) keepPending(rec []byte) {
	if o.overtaken {
		return
	}
	if int64(len(o.pending)+len(rec)) > o.pendingMax {
		o.pending, o.overtaken = nil, true
		return
	}
	o.pending = append(o.pending, rec...)
}

// rewrite writes snap as the new file and switches to it (steps 2 and
// 3 above). o.mu is not held.
func (o *OffsetStore) rewrite(snap []snapGroup, live int64) {
	slices.SortFunc(snap, func(a, b snapGroup) int { return cmp.Compare(a.name, b.name) })
	b := make([]byte, 0, live)
	for _, g := range snap {
		slices.SortFunc(g.offs, func(a, b GroupOffset) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		b = encodeCommit(b, g.name, g.at, g.offs)
	}
	snap = nil
	tmp := o.path + tmpSuffix
	f, err := o.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		if _, err = f.WriteAt(b, 0); err == nil {
			err = f.Sync()
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err == nil {
		err = o.switchTo(f, int64(len(b)))
	}
	o.rewriting, o.pending, o.overtaken, o.rewriteErr = false, nil, false, err
	if err == nil || f == o.f {
		o.rewriteAt = 0 // switched to the new file
	} else if f != nil {
		f.Close()
		o.fs.Remove(tmp)
	}
	switch {
	case errors.Is(err, errRewriteOvertaken):
		o.logger.Info("storage: the offsets log's rewrite was overtaken by commits; the next starts when the file has doubled", "path", o.path)
	case err != nil && !errors.Is(err, ErrClosed):
		o.logger.Warn("storage: rewriting the offsets log failed", "path", o.path, "err", err)
	}
}

// switchTo appends the records written since the copy to f, holding
// size bytes of it, fsyncs it, renames it over the file and writes to
// it from then on. o.mu is held.
func (o *OffsetStore) switchTo(f vfs.File, size int64) error {
	if o.closed {
		return ErrClosed
	}
	if o.overtaken {
		return errRewriteOvertaken
	}
	if len(o.pending) > 0 {
		if _, err := f.WriteAt(o.pending, size); err != nil {
			return err
		}
		size += int64(len(o.pending))
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := o.fs.Rename(o.path+tmpSuffix, o.path); err != nil {
		return err
	}
	o.f.Close()
	o.f, o.size = f, size
	if err := o.fs.SyncDir(filepath.Dir(o.path)); err != nil {
		o.dirUnsynced = true
		return err
	}
	return nil
}
