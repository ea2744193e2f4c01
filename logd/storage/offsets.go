package storage

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// GroupOffset is one committed offset of a consumer group.
type GroupOffset struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
}

// OffsetStore keeps consumer groups' committed offsets durably: every
// Commit is appended to a log file and fdatasynced before it returns,
// and survives restart. A group's offsets expire after
// Config.OffsetsRetention without commits and without members (see
// Expire). All methods are safe for concurrent use.
//
// The file, <Dir>/__group-offsets/offsets.log, is a sequence of records:
//
//	u32 length of the payload
//	u32 CRC-32C of the payload
//	payload: u8 type, then
//	  1 commit, version 0: group (u16 length, bytes), u32 count, count ×
//	                  (topic (u16, bytes), i32 partition, i64 offset,
//	                  metadata (u16, bytes))
//	  2 delete group: group
//	  3 delete topic: topic
//	  4 commit, version 1: i64 time (Unix milliseconds), then as type 1
//
// The type says the record's version. Version 0 (type 1) is what logd
// wrote before offsets expired; it is still read, its commits taken as
// made when the file is opened, and no longer written. Version 1 (type
// 4) adds the commit's time, from Config.Now. A type 4 record with no
// offsets of an existing group says it had members at that time (see
// Expire). A logd older than version 1 stops reading at the first type
// 4 record and cuts the file there: downgrading loses the offsets
// committed since the upgrade.
//
// On open the records are replayed one at a time through a 64 KiB
// buffer (the file is never read whole, so what Open holds is the live
// offsets, not the file); a torn or corrupt tail is truncated. When the
// file reaches twice what its rewrite writes (kept exactly, see
// offsets_live.go) and at least 1 MiB, it is rewritten in the
// background as one commit record per group, to offsets.log.tmp, with
// the records written meanwhile appended, fsynced and renamed over it
// (offsets_rewrite.go): commits do not wait for the rewrite, and the
// file stays within max(1 MiB, 2× the live records) plus what is
// written while a rewrite runs.
//
// What the offsets hold is bounded in count (Config.MaxGroups) and in
// bytes (Config.MaxOffsetBytes, see Bytes): a commit that would pass
// either is refused, so memory, the file and its replay stay bounded.
type OffsetStore struct {
	mu        sync.Mutex
	fs        vfs.FS
	path      string
	f         vfs.File
	size      int64
	groups    map[string]*offGroup
	maxGroups int
	maxMeta   int
	maxBytes  int64 // MaxOffsetBytes
	bytes     int64 // what the offsets are accounted at (offsets_budget.go)
	closed    bool
	// live is what a rewrite of the file writes, exactly: one commit
	// record per group (offsets_live.go). The file is rewritten when it
	// reaches twice that (and offsetsMinFile), so it stays within about
	// twice the live offsets.
	live int64
	// rewriteAt, after a rewrite failed, is the size the file must reach
	// before the next try (0: none failed).
	rewriteAt int64
	// The rewrite runs in the background (offsets_rewrite.go): while
	// rewriting, the records written are also kept in pending, for the
	// rewrite to append to the new file before it replaces the old one.
	rewriting bool
	pending   []byte
	// pendingMax bounds pending: past it the rewrite is overtaken
	// (offsets_rewrite.go) and pending is dropped.
	pendingMax  int64
	overtaken   bool
	rewrites    sync.WaitGroup // the running rewrite
	rewriteErr  error          // the last rewrite's outcome, for tests
	dirUnsynced bool           // a rewrite renamed the file, its directory not synced since

	// Expiry (offsets_expire.go).
	retention  int64            // ms; ≤ 0: never
	now        func() time.Time // Config.Now
	loadedAt   int64            // ms: the time of version 0 commits
	nextExpiry int64            // ms: no group can expire before
	active     func() []string  // groups with members; nil: none
	logger     *slog.Logger
	hooks      hooks
}

// offGroup is one group's offsets and times, in Unix milliseconds.
type offGroup struct {
	offs map[groupKey]GroupOffset
	// at is the time of the group's last commit record: its last commit,
	// or the last time it was recorded as having members.
	at int64
	// seen is the last time Expire found the group with members; kept
	// in memory only.
	seen int64
	// bytes is the group's share of OffsetStore.bytes, live its share
	// of OffsetStore.live (its record in a rewrite).
	bytes, live int64
}

type groupKey struct {
	topic     string
	partition int32
}

const (
	offsetsDir     = "__group-offsets"
	offsetsFile    = "offsets.log"
	offRecCommit   = 1
	offRecDelGroup = 2
	offRecDelTopic = 3
	offRecCommitAt = 4
	offsetsMinFile = 1 << 20
	// offsetsReadBuffer is the buffer Open replays the file through.
	offsetsReadBuffer = 64 << 10
	offRecHeaderLen   = 8
	// maxOffsetRecord bounds one record, so a damaged length cannot make
	// recovery allocate without limit.
	maxOffsetRecord = 64 << 20
)

var (
	// ErrTooManyGroups is returned by Commit for a new group beyond
	// MaxGroups.
	ErrTooManyGroups = errors.New("storage: too many consumer groups")
	// ErrMetadataTooLarge is returned by Commit for metadata over
	// MaxOffsetMetadata (Kafka's OFFSET_METADATA_TOO_LARGE).
	ErrMetadataTooLarge = errors.New("storage: offset metadata too large")
	// ErrInvalidGroup is returned by Commit for a group name longer than
	// MaxGroupBytes (Kafka's INVALID_GROUP_ID).
	ErrInvalidGroup = errors.New("storage: invalid group name")
)

// MaxGroupBytes bounds a group's name: the records hold it behind a
// 16-bit length. Kafka sets no bound.
const MaxGroupBytes = 1<<16 - 1

// offsetsConfig is what an OffsetStore takes from the Store's Config.
type offsetsConfig struct {
	fs        vfs.FS
	dir       string
	maxGroups int
	maxMeta   int
	maxBytes  int64
	retention time.Duration // ≤ 0: never
	now       func() time.Time
	logger    *slog.Logger
	hooks     hooks
}

func (c *Config) offsets() offsetsConfig {
	return offsetsConfig{c.FS, c.Dir, c.MaxGroups, c.MaxOffsetMetadata, c.MaxOffsetBytes, c.OffsetsRetention, c.Now, c.Logger, hooks(c.Hooks)}
}

func openOffsetStore(cfg offsetsConfig) (*OffsetStore, error) {
	fsys, logger := cfg.fs, cfg.logger
	dir := filepath.Join(cfg.dir, offsetsDir)
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, err
	}
	fsys.Remove(filepath.Join(dir, offsetsFile+tmpSuffix))
	o := &OffsetStore{fs: fsys, path: filepath.Join(dir, offsetsFile), groups: map[string]*offGroup{},
		maxGroups: cfg.maxGroups, maxMeta: cfg.maxMeta, maxBytes: cfg.maxBytes,
		retention: cfg.retention.Milliseconds(), now: cfg.now, loadedAt: cfg.now().UnixMilli(), nextExpiry: math.MaxInt64,
		logger: logger, hooks: cfg.hooks}
	f, err := fsys.OpenFile(o.path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// A new file: its directory entry must be durable before the
		// first commit counts as durable.
		if err := vfs.WriteFile(fsys, o.path, nil); err != nil {
			return nil, err
		}
		if err := fsys.SyncDir(dir); err != nil {
			return nil, err
		}
		f, err = fsys.OpenFile(o.path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, err
	}
	o.f = f
	good, size, err := o.replay(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if good < size {
		logger.Warn("storage: truncating a torn offsets log", "path", o.path, "at", good, "dropped", size-good)
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	}
	o.size = good
	if o.bytes > o.maxBytes || len(o.groups) > o.maxGroups {
		// Limits lowered since: serve what is held, refuse growth.
		logger.Warn("storage: committed offsets over their limits; commits that add groups or bytes are refused until expiry or deletion makes room",
			"groups", len(o.groups), "max_groups", o.maxGroups, "bytes", o.bytes, "max_bytes", o.maxBytes)
	}
	return o, nil
}

// replay applies the records of f, one at a time through a bounded
// buffer (the file is never read whole: what Open holds is the live
// offsets, not the file), and returns the length of the valid prefix
// and the file's size. An error is a failure to read the file, not a
// torn or corrupt record.
func (o *OffsetStore) replay(f vfs.File) (good, size int64, err error) {
	if size, err = f.Size(); err != nil {
		return 0, 0, err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), offsetsReadBuffer)
	var head [offRecHeaderLen]byte
	var p []byte // the record being read; reused, apply copies what it keeps
	for size-good >= offRecHeaderLen {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return good, size, err
		}
		n := int64(binary.BigEndian.Uint32(head[:]))
		if n > maxOffsetRecord || good+offRecHeaderLen+n > size {
			break
		}
		if int64(cap(p)) < n {
			p = make([]byte, n)
		}
		p = p[:n]
		if _, err := io.ReadFull(r, p); err != nil {
			return good, size, err
		}
		if crc32Castagnoli(p) != binary.BigEndian.Uint32(head[4:]) || o.apply(p) != nil {
			break
		}
		good += offRecHeaderLen + n
	}
	return good, size, nil
}

var errBadOffsetRecord = errors.New("malformed offsets record")

// offReader decodes a payload; any short read sets bad.
type offReader struct {
	b   []byte
	bad bool
}

func (r *offReader) n(k int) []byte {
	if r.bad || len(r.b) < k {
		r.bad = true
		return make([]byte, k)
	}
	v := r.b[:k]
	r.b = r.b[k:]
	return v
}

func (r *offReader) str() string { return string(r.n(int(binary.BigEndian.Uint16(r.n(2))))) }

// apply applies one payload to the in-memory state; a malformed one
// changes nothing.
func (o *OffsetStore) apply(p []byte) error {
	r := &offReader{b: p}
	typ := r.n(1)[0]
	switch typ {
	case offRecCommit, offRecCommitAt:
		at := o.loadedAt
		if typ == offRecCommitAt {
			at = int64(binary.BigEndian.Uint64(r.n(8)))
		}
		group := r.str()
		count := binary.BigEndian.Uint32(r.n(4))
		if uint64(count) > uint64(len(r.b))/16 {
			return errBadOffsetRecord
		}
		offs := make([]GroupOffset, 0, count)
		for range count {
			t := r.str()
			part := int32(binary.BigEndian.Uint32(r.n(4)))
			off := int64(binary.BigEndian.Uint64(r.n(8)))
			offs = append(offs, GroupOffset{t, part, off, r.str()})
		}
		if r.bad || len(r.b) != 0 {
			return errBadOffsetRecord
		}
		g := o.groups[group]
		if g == nil {
			g = o.addGroup(group)
		}
		for _, x := range offs {
			o.setOffset(g, x)
		}
		g.at = at
		o.expiresAt(at)
	case offRecDelGroup, offRecDelTopic:
		name := r.str()
		if r.bad || len(r.b) != 0 {
			return errBadOffsetRecord
		}
		if typ == offRecDelGroup {
			if g := o.groups[name]; g != nil {
				o.dropGroup(name, g)
			}
			break
		}
		for gname, g := range o.groups {
			for k, x := range g.offs {
				if k.topic == name {
					o.dropOffset(g, k, x)
				}
			}
			if len(g.offs) == 0 {
				o.dropGroup(gname, g)
			}
		}
	default:
		return errBadOffsetRecord
	}
	return nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// encodeCommit appends a commit record (version 1) made at ms.
func encodeCommit(b []byte, group string, ms int64, offs []GroupOffset) []byte {
	start := len(b)
	b = append(b, make([]byte, offRecHeaderLen)...)
	b = append(b, offRecCommitAt)
	b = binary.BigEndian.AppendUint64(b, uint64(ms))
	return sealRecord(appendCommitBody(b, group, offs), start)
}

// appendCommitBody appends what follows a commit record's type (and
// time): the group and its offsets.
func appendCommitBody(b []byte, group string, offs []GroupOffset) []byte {
	b = appendStr(b, group)
	b = binary.BigEndian.AppendUint32(b, uint32(len(offs)))
	for _, x := range offs {
		b = appendStr(b, x.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(x.Partition))
		b = binary.BigEndian.AppendUint64(b, uint64(x.Offset))
		b = appendStr(b, x.Metadata)
	}
	return b
}

func encodeDelete(typ byte, name string) []byte {
	b := make([]byte, offRecHeaderLen, offRecHeaderLen+3+len(name))
	b = append(b, typ)
	return sealRecord(appendStr(b, name), 0)
}

func sealRecord(b []byte, start int) []byte {
	p := b[start+offRecHeaderLen:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(p)))
	binary.BigEndian.PutUint32(b[start+4:], crc32Castagnoli(p))
	return b
}

// Commit stores a group's offsets, all or none, and returns once they
// are on disk. A new group when MaxGroups hold offsets, or a commit that
// would take the offsets past MaxOffsetBytes, first expires the groups
// past retention (see Expire), and gets ErrTooManyGroups or
// ErrOffsetsFull if that does not make room.
func (o *OffsetStore) Commit(group string, offsets []GroupOffset) error {
	if len(group) > MaxGroupBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidGroup, len(group), MaxGroupBytes)
	}
	for _, x := range offsets {
		if len(x.Metadata) > o.maxMeta {
			return fmt.Errorf("%w: %d bytes", ErrMetadataTooLarge, len(x.Metadata))
		}
		if len(x.Topic) > maxTopicLen {
			return fmt.Errorf("%w: %q", ErrInvalidTopic, x.Topic)
		}
	}
	now := o.now().UnixMilli()
	rec := encodeCommit(nil, group, now, offsets)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.roomFor(group, offsets, now); err != nil {
		return err
	}
	if err := o.write(rec); err != nil {
		return err
	}
	if err := o.apply(rec[offRecHeaderLen:]); err != nil {
		return err
	}
	return o.maybeRewrite()
}

// write appends a record durably. o.mu is held.
func (o *OffsetStore) write(rec []byte) error {
	if o.closed {
		return ErrClosed
	}
	if o.dirUnsynced {
		// The last rewrite's rename is not known durable: a commit to
		// the new file is not acknowledged until it is.
		if err := o.fs.SyncDir(filepath.Dir(o.path)); err != nil {
			return err
		}
		o.dirUnsynced = false
	}
	if _, err := o.f.WriteAt(rec, o.size); err != nil {
		return err
	}
	if err := o.f.Sync(); err != nil {
		return err
	}
	o.size += int64(len(rec))
	if o.rewriting {
		o.keepPending(rec)
	}
	return nil
}

// Fetch returns a partition's committed offset and metadata.
func (o *OffsetStore) Fetch(group, topic string, partition int32) (offset int64, metadata string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.groups[group]
	if g == nil {
		return 0, "", false
	}
	x, ok := g.offs[groupKey{topic, partition}]
	return x.Offset, x.Metadata, ok
}

// All returns every offset the group committed, sorted by topic and
// partition.
func (o *OffsetStore) All(group string) []GroupOffset {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.all(group)
}

func (o *OffsetStore) all(group string) []GroupOffset {
	g := o.groups[group]
	if g == nil {
		return []GroupOffset{}
	}
	out := make([]GroupOffset, 0, len(g.offs))
	for _, x := range g.offs {
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b GroupOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Groups returns the groups with committed offsets, sorted.
func (o *OffsetStore) Groups() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.groupNames()
}

func (o *OffsetStore) groupNames() []string {
	out := make([]string, 0, len(o.groups))
	for g := range o.groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// DeleteGroup forgets a group's offsets, durably.
func (o *OffsetStore) DeleteGroup(group string) error {
	return o.delete(offRecDelGroup, group)
}

// deleteTopic forgets every group's offsets of a deleted topic.
func (o *OffsetStore) deleteTopic(topic string) error {
	return o.delete(offRecDelTopic, topic)
}

func (o *OffsetStore) delete(typ byte, name string) error {
	rec := encodeDelete(typ, name)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.write(rec); err != nil {
		return err
	}
	if err := o.apply(rec[offRecHeaderLen:]); err != nil {
		return err
	}
	return o.maybeRewrite()
}

func (o *OffsetStore) close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	err := o.f.Close()
	o.mu.Unlock()
	// A running rewrite finds the store closed and drops its file.
	o.rewrites.Wait()
	return err
}
