package storage

import (
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// attrLogAppendTime is the timestamp-type attribute bit: every record
// of the batch has the batch's MaxTimestamp.
const attrLogAppendTime = 0x08

// OffsetForTime returns the offset and timestamp of the first record
// whose timestamp is ≥ ts, among the records readers may see (Kafka's
// ListOffsets by timestamp); -1, -1 when there is none.
func (l *Log) OffsetForTime(ts int64) (offset, timestamp int64, err error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if l.isClosed.Load() {
		return -1, -1, ErrClosed
	}
	hwm := l.hwm.Load()
	for _, s := range l.segs {
		var maxTs int64
		var times index
		if s.sealed {
			maxTs, times = s.maxTs, s.times
		} else { // appends grow them: read them under their lock
			l.idxMu.Lock()
			maxTs, times = s.maxTs, s.times
			l.idxMu.Unlock()
		}
		if maxTs < ts {
			continue
		}
		e, err := lookupTime(&times, ts)
		if err != nil {
			return -1, -1, err
		}
		off, t, err := l.scanForTime(s, int64(e.pos), hwm, ts)
		if err != nil || off >= 0 {
			return off, t, err
		}
	}
	return -1, -1, nil
}

// MaxTimestamp returns the largest record timestamp of the partition's
// segments, -1 when it holds none; OffsetForTime of it gives the first
// record with that timestamp, Kafka's answer to ListOffsets' -3
// (MAX_TIMESTAMP). It may be the timestamp of a record above the high
// watermark (an append not yet fsynced under FsyncAlways), which
// OffsetForTime then does not find.
func (l *Log) MaxTimestamp() (int64, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if l.isClosed.Load() {
		return -1, ErrClosed
	}
	m := int64(-1)
	for _, s := range l.segs {
		if s.sealed {
			m = max(m, s.maxTs)
			continue
		}
		l.idxMu.Lock()
		m = max(m, s.maxTs)
		l.idxMu.Unlock()
	}
	return m, nil
}

// scanForTime walks the batches of s from pos for the first record with
// a timestamp ≥ ts below hwm.
func (l *Log) scanForTime(s *segment, pos, hwm, ts int64) (int64, int64, error) {
	bp := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(bp)
	sc := newScanner(s.log, pos, s.visible.Load(), true, (*bp)[:0])
	var h kmsg.RecordBatch
	for {
		at, b, err := sc.next()
		if err == io.EOF {
			return -1, -1, nil
		}
		if err == nil {
			err = decodeHeader(b, &h)
		}
		if err != nil {
			return -1, -1, l.corrupt(s, at, err)
		}
		if h.FirstOffset >= hwm {
			return -1, -1, nil
		}
		if h.MaxTimestamp < ts {
			continue
		}
		if h.Attributes&attrLogAppendTime != 0 {
			return h.FirstOffset, h.MaxTimestamp, nil
		}
		found, foundTs := int64(-1), int64(-1)
		err = forEachHead(&h, func(r recordHead) bool {
			if t := h.FirstTimestamp + r.timestampDelta; t >= ts {
				found, foundTs = h.FirstOffset+int64(r.offsetDelta), t
				return false
			}
			return true
		})
		if err != nil {
			return -1, -1, l.corrupt(s, at, err)
		}
		if found >= 0 {
			return found, foundTs, nil
		}
	}
}
