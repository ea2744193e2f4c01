package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// readRegion is ReadRegion's answer as bytes: the region read from its
// file (then closed), or what was appended; and whether it was a region.
func readRegion(t *testing.T, l *Log, offset int64, maxBytes int) ([]byte, bool, error) {
	t.Helper()
	b, r, err := l.ReadRegion(nil, offset, maxBytes)
	if r.File == nil {
		return b, false, err
	}
	defer r.File.Close()
	if len(b) != 0 {
		t.Fatalf("ReadRegion(%d, %d) appended %d bytes and returned a region", offset, maxBytes, len(b))
	}
	out := make([]byte, r.Len)
	if _, err := r.File.ReadAt(out, r.Off); err != nil {
		t.Fatal(err)
	}
	return out, true, err
}

// TestReadRegionMatchesRead: for every offset and a range of byte
// limits (below a batch, around the index interval, across segments),
// ReadRegion gives the same batches as ReadAppend, and, the data being
// checked, gives them as a file region.
func TestReadRegionMatchesRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are sent from only on Linux")
	}
	clk := newClock()
	cfg := testConfig(t, clk)
	s, l := openPartition(t, cfg)
	defer s.Close()
	var end int64
	for i := range 120 {
		r := appendDurable(t, l, simpleBatch(t, "v", 1+i%7, clk.ms()+int64(i)))
		end = r.LastOffset + 1
	}
	regions := 0
	for off := int64(0); off < end; off++ {
		for _, maxBytes := range []int{1, 100, 300, 511, 512, 700, 1500, 3000, 9000, 1 << 20} {
			want, err := l.ReadAppend(nil, off, maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			got, isRegion, err := readRegion(t, l, off, maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("ReadRegion(%d, %d): %d bytes (region %v), ReadAppend: %d bytes", off, maxBytes, len(got), isRegion, len(want))
			}
			if isRegion {
				regions++
			} else if len(want) > 0 {
				t.Fatalf("ReadRegion(%d, %d) read checked batches instead of giving a region", off, maxBytes)
			}
		}
	}
	if regions == 0 {
		t.Fatal("no region given")
	}
}

// TestReadRegionNeverCorrupt: after a restart a segment's batches are
// unchecked: ReadRegion reads and checks them, never gives an unchecked
// range as a region, and refuses the batch that rotted on disk; once
// the batches before it are checked, they come as a region.
func TestReadRegionNeverCorrupt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are sent from only on Linux")
	}
	clk := newClock()
	cfg := testConfig(t, clk)
	s, l := openPartition(t, cfg)
	for i := range 20 {
		appendDurable(t, l, simpleBatch(t, "x", 2, clk.ms()+int64(i)))
	}
	s.Close()
	seg := filepath.Join(partitionDir(cfg.Dir, "t", 0), segmentName(0)+logSuffix)
	b, _ := os.ReadFile(seg)
	size := len(simpleBatch(t, "x", 2, 0))
	b[5*size+70] ^= 1 // a record of batch 5 (offsets 10, 11)
	os.WriteFile(seg, b, 0o644)
	s, l = openPartition(t, cfg)
	defer s.Close()
	for pass := range 2 {
		for off := int64(0); off < 40; off++ {
			got, isRegion, err := readRegion(t, l, off, 1<<20)
			if off == 10 || off == 11 {
				if !errors.Is(err, ErrCorruptBatch) || len(got) != 0 {
					t.Fatalf("pass %d: ReadRegion(%d): %d bytes, %v; want ErrCorruptBatch", pass, off, len(got), err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("pass %d: ReadRegion(%d): %v", pass, off, err)
			}
			recs := decodeBatches(t, got) // fails the test on any bad batch
			if off < 10 && recs[len(recs)-1].offset != 9 {
				t.Fatalf("pass %d: ReadRegion(%d) ran into the corrupt batch: last offset %d", pass, off, recs[len(recs)-1].offset)
			}
			if pass == 0 && off == 0 && isRegion {
				t.Fatal("unchecked batches given as a region")
			}
		}
	}
	// The first pass checked batches 0 to 4: they come as a region now.
	got, isRegion, err := readRegion(t, l, 0, 5*size)
	if err != nil || !isRegion || len(got) != 5*size {
		t.Fatalf("ReadRegion(0, %d) after the batches were checked: %d bytes, region %v, %v; want a region of the 5 batches", 5*size, len(got), isRegion, err)
	}
	decodeBatches(t, got)
}
