package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// benchBatch is a batch of 16 records of 1 KiB, as a producer sends it.
func benchBatch(b testing.TB) []byte {
	spec := batchSpec{ts: time.Now().UnixMilli(), pid: -1, epoch: -1, firstSeq: -1}
	for i := range 16 {
		spec.recs = append(spec.recs, rec{key: fmt.Appendf(nil, "key-%d", i), value: bytes.Repeat([]byte{'v'}, 1024)})
	}
	return makeBatch(b, spec)
}

// BenchmarkAppendFsyncAlways appends batches of 16 × 1 KiB records from
// concurrent producers, each waiting for its batch to be durable (group
// commit). In the same run, interleaved round by round (the disk is
// shared and its speed drifts), it writes the same bytes raw to a file
// on the same disk in chunks of the size one group commit made durable
// in that round, fdatasync after each: the same bytes and the same
// number of fsyncs. It reports the median of the rounds' ratios.
func BenchmarkAppendFsyncAlways(b *testing.B) {
	for _, producers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			fc := &fsyncCounter{}
			dir := b.TempDir()
			s, err := Open(Config{Dir: dir, MaintenanceInterval: -1, Hooks: []Hook{fc}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.CreateTopic("bench", 1, TopicConfig{})
			l, _ := s.Partition("bench", 0)
			batch := benchBatch(b)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			var ratios []float64
			var oursTook, rawTook time.Duration
			var fsyncs int64
			for done := 0; done < b.N; {
				n := min(b.N-done, 400)
				done += n
				before := fc.n.Load()
				b.StartTimer()
				took := appendRound(b, l, batch, producers, n)
				b.StopTimer()
				total := int64(n) * int64(len(batch))
				rounds := max(fc.n.Load()-before, 1)
				fsyncs += rounds
				raw := rawWriteSync(b, dir, total, int(max(total/rounds, int64(len(batch)))))
				oursTook += took
				rawTook += raw
				ratios = append(ratios, raw.Seconds()/took.Seconds())
			}
			sort.Float64s(ratios)
			total := float64(b.N) * float64(len(batch))
			b.ReportMetric(total/float64(fsyncs), "bytes/fsync")
			b.ReportMetric(total/rawTook.Seconds()/1e6, "raw-MB/s")
			b.ReportMetric(ratios[len(ratios)/2], "ratio")
		})
	}
}

// appendRound appends n batches from producers goroutines, each waiting
// for durability, and returns how long it took.
func appendRound(b *testing.B, l *Log, batch []byte, producers, n int) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := bytes.Clone(batch)
			for next.Add(1) <= int64(n) {
				res, err := l.Append(buf)
				if err == nil {
					err = l.WaitDurable(b.Context(), res.LastOffset)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// rawWriteSync writes total bytes sequentially to a new file in chunks,
// fdatasync after each, and returns how long it took.
func rawWriteSync(b *testing.B, dir string, total int64, chunk int) time.Duration {
	name := filepath.Join(dir, "raw")
	f, err := vfs.OS.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(name)
	defer f.Close()
	buf := bytes.Repeat([]byte{'r'}, chunk)
	start := time.Now()
	for written := int64(0); written < total; written += int64(chunk) {
		if _, err := f.WriteAt(buf[:min(int64(chunk), total-written)], written); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// replaySize is the data BenchmarkReplay reads end to end.
const replaySize = 256 << 20

// BenchmarkReplay reads a partition from offset 0 to its end, 1 MiB per
// Read into a reused buffer, and in the same round reads the same
// segment files raw with 1 MiB preads; it reports the median ratio of
// the rounds. warm: from the page cache, batches already CRC-checked
// (the steady state). cold: the files evicted from the page cache and
// the Store reopened before each round, so every batch is read from
// the disk and CRC-checked.
func BenchmarkReplay(b *testing.B) {
	cfg, size, partDir := filledStore(b, replaySize)
	files, _ := filepath.Glob(filepath.Join(partDir, "*"+logSuffix))
	sort.Strings(files)
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "cache=warm", true: "cache=cold"}[cold], func(b *testing.B) {
			if cold && !evictable(files[0]) {
				b.Skip("cannot evict files from the page cache here")
			}
			s, err := Open(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { s.Close() }()
			l, _ := s.Partition("bench", 0)
			buf := make([]byte, 0, 2<<20)
			raw := make([]byte, 1<<20)
			replay(b, l, buf) // warm the cache and check every batch
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			var ratios []float64
			var rawTook time.Duration
			for range b.N {
				b.StopTimer()
				if cold {
					s.Close()
					evict(files)
					if s, err = Open(cfg); err != nil {
						b.Fatal(err)
					}
					l, _ = s.Partition("bench", 0)
				}
				start := time.Now()
				b.StartTimer()
				replay(b, l, buf)
				b.StopTimer()
				ours := time.Since(start)
				if cold {
					evict(files)
				}
				r := rawRead(b, files, raw)
				rawTook += r
				ratios = append(ratios, r.Seconds()/ours.Seconds())
			}
			sort.Float64s(ratios)
			b.ReportMetric(float64(size)*float64(b.N)/rawTook.Seconds()/1e6, "raw-MB/s")
			b.ReportMetric(ratios[len(ratios)/2], "ratio")
		})
	}
}

// replay reads the whole partition, 1 MiB at a time.
func replay(b *testing.B, l *Log, buf []byte) {
	for off, end := int64(0), l.EndOffset(); off < end; {
		var err error
		buf, err = l.ReadAppend(buf[:0], off, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		for rest := buf; len(rest) > 0; {
			p, _ := peekBatch(rest)
			off = p.last() + 1
			rest = rest[p.size:]
		}
	}
}

// rawRead reads the files sequentially with preads of len(buf).
func rawRead(b *testing.B, files []string, buf []byte) time.Duration {
	start := time.Now()
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		for pos := int64(0); ; pos += int64(len(buf)) {
			if n, _ := f.ReadAt(buf, pos); n < len(buf) {
				break
			}
		}
		f.Close()
	}
	return time.Since(start)
}

// BenchmarkRetainedMemory opens a Store holding 64 MiB and 1 GiB of
// data and reports the Go heap in use after opening it and replaying it
// all: the figure should not grow with the data kept.
func BenchmarkRetainedMemory(b *testing.B) {
	for _, size := range []int64{64 << 20, 1 << 30} {
		b.Run(fmt.Sprintf("retained=%dMiB", size>>20), func(b *testing.B) {
			cfg, _, _ := filledStore(b, size)
			batchLen := len(benchBatch(b))
			b.ResetTimer()
			var heap uint64
			for range b.N {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				s, err := Open(cfg)
				if err != nil {
					b.Fatal(err)
				}
				l, _ := s.Partition("bench", 0)
				buf := make([]byte, 0, 1<<20)
				for off := int64(0); off < l.EndOffset(); {
					buf, err = l.ReadAppend(buf[:0], off, 1<<20)
					if err != nil {
						b.Fatal(err)
					}
					p, _ := peekBatch(buf[len(buf)-batchLen:])
					off = p.last() + 1
				}
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				heap = after.HeapInuse
				s.Close()
			}
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
		})
	}
}

// filledStore makes a closed Store whose one partition, bench-0, holds
// at least size bytes of benchmark batches, and returns its config, the
// partition's size and directory.
func filledStore(b *testing.B, size int64) (Config, int64, string) {
	cfg := Config{Dir: b.TempDir(), MaintenanceInterval: -1, Fsync: FsyncNever}
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.CreateTopic("bench", 1, TopicConfig{}); err != nil {
		b.Fatal(err)
	}
	l, _ := s.Partition("bench", 0)
	batch := benchBatch(b)
	for l.Size() < size {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	n, dir := l.Size(), l.dir
	s.Close()
	return cfg, n, dir
}
