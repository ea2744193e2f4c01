package storage

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// TestReadEveryOffset: a Read from every offset, with limits from one
// byte to several batches, over small segments, returns whole batches,
// the first holding the offset (whole however large: Kafka's fetch
// semantics), each following the one before with no gap, within the
// limit but for the first batch, and the batches starting with it as a
// scan of the log has them; a ReadRegion returns a prefix of the same.
func TestReadEveryOffset(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.SegmentBytes, cfg.IndexIntervalBytes = 2<<10, 128
	s, l := openPartition(t, cfg)
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var all []byte // every batch, in order, as stored
	for i := range 200 {
		spec := batchSpec{ts: clk.ms(), pid: -1, epoch: -1, firstSeq: -1, codec: []int{codecNone, codecZstd}[i%2]}
		for range 1 + rng.IntN(6) {
			spec.recs = append(spec.recs, rec{value: make([]byte, rng.IntN(300))})
		}
		b := makeBatch(t, spec)
		appendDurable(t, l, b)
		all = append(all, b...)
	}
	at := map[int64]int{} // offset -> position in all of the batch holding it
	for pos := 0; pos < len(all); {
		p, _ := peekBatch(all[pos:])
		for o := p.base; o <= p.last(); o++ {
			at[o] = pos
		}
		pos += int(p.size)
	}
	regions := 0
	for o := int64(0); o < l.HighWatermark(); o++ {
		for _, maxBytes := range []int{1, 61, 300, 1000, 4000, 1 << 20} {
			got, err := l.Read(o, maxBytes)
			if err != nil {
				t.Fatalf("Read(%d, %d): %v", o, maxBytes, err)
			}
			first, ok := peekBatch(got)
			if !ok {
				t.Fatalf("Read(%d, %d) returned %d bytes, want at least the batch holding %d", o, maxBytes, len(got), o)
			}
			if first.base > o || first.last() < o {
				t.Fatalf("Read(%d, %d) starts with the batch %d..%d", o, maxBytes, first.base, first.last())
			}
			if len(got) > max(maxBytes, int(first.size)) {
				t.Fatalf("Read(%d, %d) returned %d bytes, first batch %d", o, maxBytes, len(got), first.size)
			}
			if want := all[at[o]:]; !bytes.HasPrefix(want, got) {
				t.Fatalf("Read(%d, %d): %d bytes that are not the log's from the batch holding %d", o, maxBytes, len(got), o)
			}
			if maxBytes == 1<<20 && at[o]+len(got) != len(all) {
				// A limit larger than a segment ends only at its end.
				if p, _ := peekBatch(all[at[o]+len(got):]); l.segBase(p.base) == l.segBase(o) {
					t.Fatalf("Read(%d, %d) stopped after %d bytes, inside its segment", o, maxBytes, len(got))
				}
			}
			_, r, err := l.ReadRegion(nil, o, maxBytes)
			if err != nil {
				t.Fatalf("ReadRegion(%d, %d): %v", o, maxBytes, err)
			}
			if r.File != nil {
				regions++
				b := make([]byte, r.Len)
				_, err := r.File.ReadAt(b, r.Off)
				r.File.Close()
				if err != nil && err != io.EOF {
					t.Fatal(err)
				}
				if len(b) == 0 || !bytes.HasPrefix(got, b) {
					t.Fatalf("ReadRegion(%d, %d): %d bytes, not a prefix of Read's %d", o, maxBytes, len(b), len(got))
				}
			}
		}
	}
	if regions == 0 {
		t.Error("no ReadRegion returned a file region")
	}
}

// segBase returns the base offset of the segment holding offset.
func (l *Log) segBase(offset int64) int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	b := int64(-1)
	for _, s := range l.segs {
		if s.base <= offset {
			b = s.base
		}
	}
	return b
}
