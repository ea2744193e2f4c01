package logd

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDamagedSegment: logd is stopped, the tail of its segment garbled
// or cut and its indexes deleted; it starts again, cuts the damage,
// rebuilds the indexes and serves every record before the damage.
func TestDamagedSegment(t *testing.T) {
	for _, damage := range []string{"truncate", "garble"} {
		t.Run(damage, func(t *testing.T) {
			ts := startServer(t, t.TempDir())
			cl := newClient(t, ts.addr)
			createTopic(t, cl, "d", 1)
			// Ten batches of ten records, each sent as one batch: a
			// client's producer may split ten records into several.
			for b := 0; b < 10; b++ {
				var values [][]byte
				for i := 0; i < 10; i++ {
					values = append(values, fmt.Appendf(nil, "b%d-%d", b, i))
				}
				produceBatch(t, cl, "d", recordBatch(values...))
			}
			cl.Close()
			if err := ts.Close(); err != nil {
				t.Fatal(err)
			}
			partDir := filepath.Join(ts.dir, "d-0")
			entries, err := os.ReadDir(partDir)
			if err != nil {
				t.Fatal(err)
			}
			var seg string
			for _, e := range entries {
				switch {
				case strings.HasSuffix(e.Name(), ".log"):
					seg = filepath.Join(partDir, e.Name())
				case strings.HasSuffix(e.Name(), "index"):
					os.Remove(filepath.Join(partDir, e.Name()))
				}
			}
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			if n := countBatches(t, data); n != 10 {
				t.Fatalf("the segment holds %d batches, want 10 of 10 records", n)
			}
			switch damage {
			case "truncate":
				data = data[:len(data)-7]
			case "garble":
				for i := len(data) - 40; i < len(data)-20; i++ {
					data[i] ^= 0x5a
				}
			}
			if err := os.WriteFile(seg, data, 0o644); err != nil {
				t.Fatal(err)
			}

			ts2 := startServer(t, ts.dir, func(c *Config) { *c = ts.cfg })
			c := newClient(t, ts2.addr, kgo.ConsumeTopics("d"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			got := consume(t, c, 90)
			for i, r := range got {
				want := fmt.Sprintf("b%d-%d", i/10, i%10)
				if string(r.Value) != want || r.Offset != int64(i) {
					t.Fatalf("record %d: %q at offset %d, want %q", i, r.Value, r.Offset, want)
				}
			}
			if end := listEnd(t, c, "d"); end != 90 {
				t.Fatalf("log end %d after cutting the damaged last batch, want 90", end)
			}
			if ts2.metrics.truncations.Load() == 0 {
				t.Fatal("the truncation was not reported")
			}
		})
	}
}

// countBatches counts the record batches of a segment file, each with
// 10 records.
func countBatches(t *testing.T, seg []byte) int {
	t.Helper()
	n := 0
	for len(seg) >= 61 {
		size := 12 + int(binary.BigEndian.Uint32(seg[8:]))
		if size > len(seg) {
			t.Fatalf("batch %d is torn before the damage", n)
		}
		if records := binary.BigEndian.Uint32(seg[57:]); records != 10 {
			t.Fatalf("batch %d holds %d records, want 10", n, records)
		}
		seg = seg[size:]
		n++
	}
	return n
}
