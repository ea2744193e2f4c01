package storage

import (
	"encoding/binary"
	"errors"
	"sort"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// An index is a segment's offset index or time index: fixed-size
// big-endian entries, ascending. The active segment keeps its entries in
// memory (written to disk when it is sealed or closed); a sealed segment
// reads them from its file, so memory does not grow with the data kept.
//
// Offset index entry (8 bytes): offset − segment base (u32), file
// position of the batch starting there (u32).
//
// Time index entry (16 bytes): timestamp (i64), offset − base (u32),
// position (u32): every batch before that position has a MaxTimestamp ≤
// the timestamp. A sealed segment's last entry is its seal: the largest
// timestamp in the segment, its next offset − base and its size.
type index struct {
	entryLen int
	mem      []byte   // active segment: all entries
	f        vfs.File // sealed segment: the file of entries
	n        int
}

const (
	offEntryLen  = 8
	timeEntryLen = 16
)

type offEntry struct {
	rel uint32
	pos uint32
}

type timeEntry struct {
	ts  int64
	rel uint32
	pos uint32
}

func (e offEntry) encode(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, e.rel)
	return binary.BigEndian.AppendUint32(b, e.pos)
}

func (e timeEntry) encode(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
	b = binary.BigEndian.AppendUint32(b, e.rel)
	return binary.BigEndian.AppendUint32(b, e.pos)
}

func decodeOff(b []byte) offEntry {
	return offEntry{binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])}
}

func decodeTime(b []byte) timeEntry {
	return timeEntry{int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint32(b[12:])}
}

// entry returns entry i in buf (which must hold entryLen bytes).
func (x *index) entry(i int, buf []byte) ([]byte, error) {
	if x.mem != nil {
		return x.mem[i*x.entryLen : (i+1)*x.entryLen], nil
	}
	buf = buf[:x.entryLen]
	if _, err := x.f.ReadAt(buf, int64(i*x.entryLen)); err != nil {
		return nil, err
	}
	return buf, nil
}

// search returns the number of entries for which below is true; below
// must be true for a prefix of the entries.
func (x *index) search(below func(e []byte) bool) (int, error) {
	var buf [timeEntryLen]byte
	var err error
	i := sort.Search(x.n, func(i int) bool {
		if err != nil {
			return true
		}
		var e []byte
		e, err = x.entry(i, buf[:])
		return err != nil || !below(e)
	})
	return i, err
}

func (x *index) add(e []byte) {
	x.mem = append(x.mem, e...)
	x.n++
}

// lookupOffset returns the entry with the largest offset ≤ rel (the zero
// entry, position 0, if none).
func lookupOffset(x *index, rel uint32) (offEntry, error) {
	i, err := x.search(func(e []byte) bool { return decodeOff(e).rel <= rel })
	if err != nil || i == 0 {
		return offEntry{}, err
	}
	var buf [offEntryLen]byte
	e, err := x.entry(i-1, buf[:])
	if err != nil {
		return offEntry{}, err
	}
	return decodeOff(e), nil
}

// lookupTime returns the entry with the largest position whose
// timestamp is < ts: every batch before its position is older than ts
// (the zero entry if none).
func lookupTime(x *index, ts int64) (timeEntry, error) {
	i, err := x.search(func(e []byte) bool { return decodeTime(e).ts < ts })
	if err != nil || i == 0 {
		return timeEntry{}, err
	}
	var buf [timeEntryLen]byte
	e, err := x.entry(i-1, buf[:])
	if err != nil {
		return timeEntry{}, err
	}
	return decodeTime(e), nil
}

// readIndexFile reads a whole index file and checks it: a whole number
// of entries, strictly ascending offsets and positions, positions within
// size, offsets below limit (next − base). A time index's timestamps
// must not decrease.
func readIndexFile(fsys vfs.FS, path string, entryLen int, size int64, limit uint32) ([]byte, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	if len(b)%entryLen != 0 {
		return nil, errBadIndex
	}
	prevTs := int64(-1 << 63)
	var prevRel, prevPos uint32
	for i := 0; i < len(b); i += entryLen {
		var rel, pos uint32
		if entryLen == offEntryLen {
			e := decodeOff(b[i:])
			rel, pos = e.rel, e.pos
		} else {
			e := decodeTime(b[i:])
			if e.ts < prevTs {
				return nil, errBadIndex
			}
			rel, pos, prevTs = e.rel, e.pos, e.ts
		}
		if i > 0 && (rel <= prevRel || pos <= prevPos) || int64(pos) > size || rel > limit {
			return nil, errBadIndex
		}
		prevRel, prevPos = rel, pos
	}
	return b, nil
}

var errBadIndex = errors.New("index entries out of order or out of range")
