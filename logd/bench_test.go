package logd

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/logd/storage/vfs"
	"github.com/brokerless/brokerless/transport/latency"
)

// The benchmarks compare logd with the disk it runs on, in the same run,
// and report ratios of medians over interleaved rounds (this is a shared
// virtual machine whose disk speed swings from run to run):
//
//	go test -run XXX -bench 'Produce|Replay' -benchtime 200000x ./logd/
//	go test -run XXX -bench Latency -benchtime 5000x ./logd/
//
// b.N is the number of 1 KiB records per round.

const (
	benchRecord = 1024
	benchRounds = 5
)

// BenchmarkProduce1KiB: franz-go producing 1 KiB records with acks=all
// (idempotent; logd's default fsync policy, group commit) against raw
// sequential writes of the same bytes to the same disk with the same
// number of fdatasyncs: each round, the raw side writes exactly as many
// bytes as logd's segments grew by, in as many chunks as logd made file
// syncs, each chunk followed by fdatasync. Both sides' bytes on disk and
// fdatasync counts are reported (per round, medians).
//
//   - none: no compression, random values (incompressible), so logd's
//     bytes on disk are the records plus Kafka's batch framing;
//   - none-4producers: the same from 4 clients (4 connections) at once,
//     b.N records in all;
//   - none-fsyncnever: none with logd's fsync policy never (acks=all
//     answered once appended): logd then syncs only at segment rolls,
//     and the raw side makes as many fdatasyncs (none at all when logd
//     made none: the page cache's speed); whether the fsyncs are what
//     bounds one producer;
//   - snappy-compressed: franz-go's default codec with values half
//     random, half zeros, which snappy roughly halves;
//   - clientprocess-none, clientprocess-none-4producers: none and
//     none-4producers with the clients (the same franz-go defaults, the
//     same records) in a child process instead of this one: the same
//     work on the same two cores, but logd's goroutines no longer wait
//     for a P behind the clients' (one of the two Ps runs the producing
//     loop almost without a break);
//   - none-5inflight: none with franz-go allowed 5 produce requests in
//     flight on its connection (idempotence off: franz-go keeps one in
//     flight when producing idempotently), acks=all still, to show
//     whether the disk's wait for the next request is the client's
//     single request in flight.
//
// logd also asks the kernel to start writing each appended batch to the
// device at once (sync_file_range with WRITE alone, Log.Append's
// write-behind hint), where the raw side leaves its chunk in the page
// cache until its fdatasync: the same bytes and the same fdatasyncs,
// with logd's device I/O starting earlier, so logd's time in fdatasync
// (fsync-busy, fsync-x-raw) no longer covers all of its writing.
//
// Rounds alternate which side goes first. Metrics: MiB/s is record
// values produced per second; disk-MiB/s is logd's on-disk bytes per
// second and raw-MiB/s the raw side's; x-raw is the median of the
// rounds' ratios of the two (same bytes, same fdatasyncs: 1 is the
// disk's speed at writing and syncing serially; logd can pass 1, as it
// writes the next requests while an fsync runs); the clients run in
// this process, on the same cores;
// disk-B/rec is on-disk bytes per record; fdatasyncs and raw-fdatasyncs
// are per round (logd's count every file sync: segments, indexes, state
// files; a round crosses one or two segment rolls, each of which syncs
// the old segment, its two index files, the producer snapshot and the
// recovery point); dir-syncs are logd's directory syncs per round (three
// per roll), which the raw side does not make, and dir-sync-busy the
// share of logd's time in them; fsync-busy and raw-fsync-busy are the shares of each side's
// time spent in file syncs (summed, per round, median): the raw side
// spends the rest writing into the page cache, logd's writes can run
// while it syncs, so time logd spends outside fsyncs is time its disk
// waited: sync-wait is the share of logd's time its disk was idle while
// appended data waited for the group commit to start its fdatasync,
// request-wait the share it was idle with nothing appended to sync
// (logd waiting for the clients' next requests), both between logd's
// first and last file sync of the round (medians; under fsync always
// only, 0 otherwise: without a group commit no append waits for an
// fsync); fsync-x-raw is
// logd's time in file syncs over the raw side's, for the same bytes and
// count (median of the rounds): above 1 when logd's fsyncs are slower
// than raw's, as they are while the CPU is busy (see
// BenchmarkRawFsyncBusyCPU); x-raw-bound is the x-raw logd would reach
// if its disk never waited (its time in file syncs only: the raw
// side's time over logd's time in syncs, median of the rounds), so
// x-raw cannot pass it without faster fsyncs; cpu is this process's CPU time per second
// of the round and per core (the clients' included unless they run in
// their own process).
func BenchmarkProduce1KiB(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchProduce(b, kgo.NoCompression(), 1, 1) })
	b.Run("none-fsyncnever", func(b *testing.B) {
		benchProduceWith(b, kgo.NoCompression(), 1, 1, false, storage.FsyncNever)
	})
	b.Run("none-4producers", func(b *testing.B) { benchProduce(b, kgo.NoCompression(), 1, 4) })
	b.Run("snappy-compressed", func(b *testing.B) { benchProduce(b, kgo.SnappyCompression(), 2, 1) })
	b.Run("clientprocess-none", func(b *testing.B) { benchProduceWith(b, kgo.NoCompression(), 1, 1, true, storage.FsyncAlways) })
	b.Run("clientprocess-none-4producers", func(b *testing.B) { benchProduceWith(b, kgo.NoCompression(), 1, 4, true, storage.FsyncAlways) })
	b.Run("none-5inflight", func(b *testing.B) {
		benchProduceWith(b, kgo.NoCompression(), 1, 1, false, storage.FsyncAlways, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	})
}

// envBenchClient makes this test binary the producing clients of
// BenchmarkProduce1KiB's clientprocess variants: "addr|producers|records".
const envBenchClient = "BROKERLESS_LOGD_BENCH_CLIENT"

// produceRound produces n records of values through clients, record i
// through client i mod len(clients), each client from its own goroutine,
// and waits until all are acknowledged; it returns the first error.
func produceRound(ctx context.Context, clients []*kgo.Client, values [][]byte, n int) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	for p, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < n; i += len(clients) {
				cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
					if err != nil {
						fail(err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return first
}

// runBenchClient produces a round of records (as benchProduceWith's
// in-process clients do, with franz-go's defaults and no compression)
// each time a line arrives on stdin, and answers "done" once they are
// all acknowledged ("failed" if one was not).
func runBenchClient(spec string) int {
	parts := strings.Split(spec, "|")
	var producers, n int
	fmt.Sscan(parts[1], &producers)
	fmt.Sscan(parts[2], &n)
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(parts[0]), kgo.DefaultProduceTopic("bench"), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cl.Close()
		clients[i] = cl
	}
	values := randomValues(1)
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := produceRound(ctx, clients, values, n); err != nil {
			fmt.Println("failed")
		} else {
			fmt.Println("done")
		}
	}
	return 0
}

// benchValues is how many distinct values the benchmarks cycle through
// (4 MiB, more than a batch, so a codec sees no repeats within one).
const benchValues = 4096

// randomValues returns benchValues values of benchRecord bytes whose
// first benchRecord/zeroFraction bytes are random and the rest zeros.
func randomValues(zeroFraction int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	vs := make([][]byte, benchValues)
	for i := range vs {
		v := make([]byte, benchRecord)
		for j := 0; j < benchRecord/zeroFraction; j += 8 {
			binary.LittleEndian.PutUint64(v[j:], rng.Uint64())
		}
		vs[i] = v
	}
	return vs
}

func benchProduce(b *testing.B, codec kgo.CompressionCodec, zeroFraction, producers int) {
	benchProduceWith(b, codec, zeroFraction, producers, false, storage.FsyncAlways)
}

// benchProduceWith runs BenchmarkProduce1KiB's rounds; with proc the
// producing clients run in a child process (this test binary again, see
// runBenchClient), as a Kafka client does in production, instead of
// sharing this process's goroutine scheduler with logd; the cpu metric
// is then logd's alone. fsync is logd's fsync policy.
func benchProduceWith(b *testing.B, codec kgo.CompressionCodec, zeroFraction, producers int, proc bool, fsync storage.FsyncPolicy, opts ...kgo.Opt) {
	dir := b.TempDir()
	cfs := &countingFS{FS: vfs.OS, timeline: true}
	ts := startServer(b, filepath.Join(dir, "logd"), func(c *Config) { c.Storage.FS = cfs; c.Storage.Fsync = fsync })
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		clients[i] = newClient(b, ts.addr, append([]kgo.Opt{kgo.DefaultProduceTopic("bench"), kgo.ProducerBatchCompression(codec)}, opts...)...)
	}
	createTopic(b, clients[0], "bench", 1)
	var toChild io.Writer
	var fromChild *bufio.Reader
	if proc {
		toChild, fromChild = benchChild(b, fmt.Sprintf("%s=%s|%d|%d", envBenchClient, ts.addr, producers, b.N))
	}
	partDir := filepath.Join(ts.dir, "bench-0")
	values := randomValues(zeroFraction)
	ctx := context.Background()
	var rates, diskRates, raws, ratios, perRec, syncs, rawSyncs, busy, rawBusy []float64
	var syncWaits, requestWaits []float64
	var disk, n int64    // logd's on-disk bytes and file syncs in the last round
	var syncBusy float64 // the share of the last round's time logd spent in file syncs
	var syncWait, requestWait float64
	var dirN int64      // directory syncs in the last round
	var dirBusy float64 // the share of the last round's time in them
	var dirNs, dirBusys []float64
	var cpuShare float64 // the process's CPU time in the last round, per second and core
	var cpuShares []float64
	var fsyncRatios []float64 // logd's seconds in file syncs over the raw side's, per round
	var bounds []float64      // the x-raw logd would reach with its disk never idle, per round
	produce := func() float64 {
		cpu0 := latency.ProcessCPU()
		before, syncs0, nanos0 := dirBytes(b, partDir, ".log"), cfs.syncs.Load(), cfs.syncNanos.Load()
		dirs0, dirNanos0 := cfs.dirSyncs.Load(), cfs.dirSyncNanos.Load()
		cfs.takeTimeline()
		start := time.Now()
		if proc {
			fmt.Fprintln(toChild, "go")
			if line, err := fromChild.ReadString('\n'); line != "done\n" {
				b.Fatalf("client process: %q %v", line, err)
			}
		} else if err := produceRound(ctx, clients, values, b.N); err != nil {
			b.Error(err)
		}
		took := time.Since(start).Seconds()
		disk, n = dirBytes(b, partDir, ".log")-before, cfs.syncs.Load()-syncs0
		syncBusy = float64(cfs.syncNanos.Load()-nanos0) / 1e9 / took
		dirN, dirBusy = cfs.dirSyncs.Load()-dirs0, float64(cfs.dirSyncNanos.Load()-dirNanos0)/1e9/took
		sw, rw := diskIdle(cfs.takeTimeline())
		if fsync != storage.FsyncAlways {
			sw, rw = 0, 0 // no group commit: no append waits for an fsync
		}
		syncWait, requestWait = sw.Seconds()/took, rw.Seconds()/took
		cpuShare = (latency.ProcessCPU() - cpu0).Seconds() / took / float64(runtime.NumCPU())
		return took
	}
	for round := range benchRounds {
		// Rounds alternate which side goes first; the raw side writes
		// what logd wrote in its latest round.
		var took, rawTook float64
		var rawN, rawBytes int64
		var rawSynced float64
		raw := func() {
			rawBytes = disk
			rawTook, rawN, rawSynced = rawWrite(b, filepath.Join(dir, fmt.Sprint("raw", round)), disk, n)
		}
		if round%2 == 0 {
			took = produce()
			raw()
		} else {
			raw()
			took = produce()
		}
		rates = append(rates, float64(b.N)*benchRecord/took)
		diskRates = append(diskRates, float64(disk)/took)
		raws = append(raws, float64(rawBytes)/rawTook)
		ratios = append(ratios, float64(disk)/took/(float64(rawBytes)/rawTook))
		perRec = append(perRec, float64(disk)/float64(b.N))
		syncs, rawSyncs = append(syncs, float64(n)), append(rawSyncs, float64(rawN))
		busy, rawBusy = append(busy, syncBusy), append(rawBusy, rawSynced/rawTook)
		syncWaits, requestWaits = append(syncWaits, syncWait), append(requestWaits, requestWait)
		dirNs, dirBusys = append(dirNs, float64(dirN)), append(dirBusys, dirBusy)
		cpuShares = append(cpuShares, cpuShare)
		if rawSynced > 0 && syncBusy > 0 { // else neither side synced (none-fsyncnever)
			fsyncRatios = append(fsyncRatios, syncBusy*took/rawSynced)
			bounds = append(bounds, rawTook/(syncBusy*took))
		}
		b.Logf("round %d: logd %.0f disk-MiB/s (%d B, %d fdatasyncs, in fdatasync %.0f%% of the time, disk idle with appended data waiting for its fdatasync %.0f%%, waiting for requests %.0f%%; %d directory syncs, %.1f%%; CPU %.0f%% of the cores), raw %.0f MiB/s (%d B, %d fdatasyncs, %.0f%%), x%.2f",
			round, diskRates[round]/(1<<20), disk, n, 100*syncBusy, 100*syncWait, 100*requestWait, dirN, 100*dirBusy, 100*cpuShare, raws[round]/(1<<20), rawBytes, rawN, 100*rawSynced/rawTook, ratios[round])
	}
	b.ReportMetric(median(rates)/(1<<20), "MiB/s")
	b.ReportMetric(median(diskRates)/(1<<20), "disk-MiB/s")
	b.ReportMetric(median(raws)/(1<<20), "raw-MiB/s")
	b.ReportMetric(median(ratios), "x-raw")
	b.ReportMetric(median(perRec), "disk-B/rec")
	b.ReportMetric(median(syncs), "fdatasyncs")
	b.ReportMetric(median(rawSyncs), "raw-fdatasyncs")
	b.ReportMetric(median(busy), "fsync-busy")
	b.ReportMetric(median(rawBusy), "raw-fsync-busy")
	b.ReportMetric(median(syncWaits), "sync-wait")
	b.ReportMetric(median(requestWaits), "request-wait")
	b.ReportMetric(median(dirNs), "dir-syncs")
	b.ReportMetric(median(dirBusys), "dir-sync-busy")
	b.ReportMetric(median(cpuShares), "cpu")
	if len(bounds) > 0 {
		b.ReportMetric(median(fsyncRatios), "fsync-x-raw")
		b.ReportMetric(median(bounds), "x-raw-bound")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRawFsyncBusyCPU: the raw side of BenchmarkProduce1KiB alone
// (b.N KiB written in 100 chunks, each followed by fdatasync), with the
// CPU idle and with one goroutine per core spinning meanwhile (as
// logd's clients and reader keep the CPU busy while its group commit
// fsyncs; the writer has a P of its own), alternating. fsync-slowdown is the median over rounds of the
// busy run's time in fdatasync over the idle run's, MiB/s-idle and
// MiB/s-busy the throughputs. On the 2-core VM this was written on,
// the fdatasyncs took 1.4-4.3 times as long with the CPU busy (6 runs,
// load 4-8, median 2.2): the thread waiting in fdatasync is woken after each of its
// I/Os (data, inode, cache flush) and then waits for a core. The
// raw side of BenchmarkProduce1KiB syncs with the CPU idle; logd's
// group commit cannot, since overlapping the next requests with the
// fsync is the point of it.
func BenchmarkRawFsyncBusyCPU(b *testing.B) {
	dir := b.TempDir()
	n := int64(b.N) * benchRecord
	var slow, idleRates, busyRates []float64
	for round := range benchRounds {
		var idle, busy, idleTook, busyTook float64
		run := func(spin bool) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if spin {
				// One more P than spinners: the writer never waits for
				// a P, only for a core, as a thread in the kernel does.
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.NumCPU() + 1))
				for range runtime.NumCPU() {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for x := 0; ; x++ {
							if x%4096 == 0 {
								select {
								case <-stop:
									return
								default:
								}
							}
						}
					}()
				}
			}
			took, _, synced := rawWrite(b, filepath.Join(dir, fmt.Sprint("raw", round, spin)), n, 100)
			close(stop)
			wg.Wait()
			if spin {
				busy, busyTook = synced, took
			} else {
				idle, idleTook = synced, took
			}
		}
		run(round%2 == 1)
		run(round%2 == 0)
		slow = append(slow, busy/idle)
		idleRates, busyRates = append(idleRates, float64(n)/idleTook), append(busyRates, float64(n)/busyTook)
	}
	b.ReportMetric(median(slow), "fsync-slowdown")
	b.ReportMetric(median(idleRates)/(1<<20), "MiB/s-idle")
	b.ReportMetric(median(busyRates)/(1<<20), "MiB/s-busy")
	b.ReportMetric(0, "ns/op")
}

// rawWrite writes n random bytes to path in syncs chunks, each followed
// by fdatasync (syncs 0: one chunk, not synced), and returns the seconds
// it took, the fdatasyncs made and the seconds spent in them.
func rawWrite(b *testing.B, path string, n, syncs int64) (took float64, made int64, synced float64) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(path)
	defer f.Close()
	chunk := max((n+max(syncs, 1)-1)/max(syncs, 1), 1)
	buf := make([]byte, min(chunk, 1<<20))
	for i, rng := 0, rand.New(rand.NewPCG(3, 4)); i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
	var inSync time.Duration
	start := time.Now()
	for done := int64(0); done < n; {
		w := min(chunk, n-done)
		for left := w; left > 0; {
			k, err := f.Write(buf[:min(left, int64(len(buf)))])
			if err != nil {
				b.Fatal(err)
			}
			left -= int64(k)
		}
		done += w
		if syncs == 0 {
			continue // the page cache's speed: logd did not sync either
		}
		t := time.Now()
		if err := rawDatasync(f); err != nil {
			b.Fatal(err)
		}
		inSync += time.Since(t)
		made++
	}
	return time.Since(start).Seconds(), made, inSync.Seconds()
}

// dirBytes sums the sizes of a directory's files with the suffix.
func dirBytes(b *testing.B, dir, suffix string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			info, err := e.Info()
			if err != nil {
				b.Fatal(err)
			}
			n += info.Size()
		}
	}
	return n
}

// countingFS counts the file syncs (fdatasync) the store makes, and
// records the directories it syncs; when timeline is set, also when
// each file sync ran and when each write to a segment (.log) ended.
type countingFS struct {
	vfs.FS
	syncs     atomic.Int64
	syncNanos atomic.Int64 // time spent in file syncs
	// Directory syncs (a segment roll makes three: the new segment's
	// entry, the producer snapshot's and the recovery point's), which
	// the raw side has no counterpart for.
	dirSyncs     atomic.Int64
	dirSyncNanos atomic.Int64

	mu         sync.Mutex
	syncedDirs map[string]bool
	timeline   bool
	spans      []span      // file syncs
	logWrites  []time.Time // ends of segment writes
}

// span is when something ran.
type span struct{ start, end time.Time }

// takeTimeline returns the file syncs and segment writes recorded since
// the last call, and forgets them.
func (c *countingFS) takeTimeline() (syncs []span, writes []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	syncs, writes = c.spans, c.logWrites
	c.spans, c.logWrites = nil, nil
	return syncs, writes
}

// diskIdle splits the time between consecutive file syncs (the disk
// idle, as far as logd's syncs go) in two: syncWait, while a segment
// write that no sync started yet covers had ended (appended data
// waiting for the group commit to start its fdatasync), and
// requestWait, while there was none (logd waiting for requests).
func diskIdle(syncs []span, writes []time.Time) (syncWait, requestWait time.Duration) {
	slices.SortFunc(syncs, func(a, b span) int { return a.start.Compare(b.start) })
	slices.SortFunc(writes, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(syncs); i++ {
		prev, next := syncs[i-1], syncs[i].start
		if !next.After(prev.end) {
			continue
		}
		// The first write to end after the previous sync started.
		j, _ := slices.BinarySearchFunc(writes, prev.start, func(w, t time.Time) int { return w.Compare(t) })
		if j == len(writes) || !writes[j].Before(next) {
			requestWait += next.Sub(prev.end)
			continue
		}
		first := writes[j]
		if first.After(prev.end) {
			requestWait += first.Sub(prev.end)
			syncWait += next.Sub(first)
		} else {
			syncWait += next.Sub(prev.end)
		}
	}
	return syncWait, requestWait
}

func (c *countingFS) SyncDir(name string) error {
	c.mu.Lock()
	if c.syncedDirs == nil {
		c.syncedDirs = map[string]bool{}
	}
	c.syncedDirs[filepath.Clean(name)] = true
	c.mu.Unlock()
	c.dirSyncs.Add(1)
	start := time.Now()
	err := c.FS.SyncDir(name)
	c.dirSyncNanos.Add(int64(time.Since(start)))
	return err
}

// dirSynced reports whether directory name was synced.
func (c *countingFS) dirSynced(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncedDirs[name]
}

func (c *countingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c, log: strings.HasSuffix(name, ".log")}, nil
}

type countingFile struct {
	vfs.File
	fs  *countingFS
	log bool // a segment
}

func (f *countingFile) Sync() error {
	f.fs.syncs.Add(1)
	start := time.Now()
	err := f.File.Sync()
	end := time.Now()
	f.fs.syncNanos.Add(int64(end.Sub(start)))
	f.fs.mu.Lock()
	if f.fs.timeline {
		f.fs.spans = append(f.fs.spans, span{start, end})
	}
	f.fs.mu.Unlock()
	return err
}

func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if f.log {
		end := time.Now()
		f.fs.mu.Lock()
		if f.fs.timeline {
			f.fs.logWrites = append(f.fs.logWrites, end)
		}
		f.fs.mu.Unlock()
	}
	return n, err
}

func (f *countingFile) WriteBehind(off, n int64) {
	if r, ok := f.File.(vfs.WriteBehinder); ok {
		r.WriteBehind(off, n)
	}
}

func (f *countingFile) Readahead(off, n int64) {
	if r, ok := f.File.(vfs.Readaheader); ok {
		r.Readahead(off, n)
	}
}

// BenchmarkReplay1KiB: b.N random 1 KiB records, uncompressed (the
// segments hold about 1 KiB per record, MiB-on-disk), fetched from
// offset 0 (Fetch requests
// for whole record batches, as a consumer's network layer issues them,
// one at a time, as franz-go keeps one fetch per broker; up to 1 MiB per
// partition, franz-go's default) against raw sequential reads of its
// segment files. Every side starts cold: the segments are evicted from
// the page cache first. Each round runs, in turn, the raw read, logd
// sending record sets from the files (sendfile, its default on Linux)
// and logd reading them and writing them from memory (as on a TLS
// connection), the order rotating by round.
//
//   - 1partition: one partition, 1 MiB per round trip;
//   - 4partitions: the same bytes in 4 partitions, each fetch asking
//     for all 4 (up to 4 MiB per round trip);
//   - clientprocess-1partition, clientprocess-4partitions: the same
//     with the fetching client in a child process (this test binary
//     again, runBenchFetcher), as a consumer runs, so that the Go
//     scheduler cannot put it and logd's connection on one P; the
//     cpu metrics are then logd's alone.
//
// Metrics: MiB/s (sendfile), copy-MiB/s and raw-MiB/s are medians of
// the rounds; x-raw and copy-x-raw the medians of the rounds' ratios to
// the raw read of the same round, x-raw-min and x-raw-max their spread;
// cpu-ms/GiB and copy-cpu-ms/GiB the process's CPU time (user+system,
// the fetching client included) per GiB fetched, raw-cpu-ms/GiB the
// raw read's; disk-busy and raw-disk-busy (Linux) the share of the time
// the disks were busy during the sendfile side and the raw read. Each
// round also logs, for each side, the bytes read from the disks per
// byte delivered (1.00 when both sides did the same reads), the mean
// read size, and, in a virtual machine whose kernel counts it, the
// memory reported free to the hypervisor meanwhile: a hypervisor that
// drops those pages makes the guest pay for each on its next first
// touch, which lands on whichever side gets them (a cost of the VM, not
// of either side).
func BenchmarkReplay1KiB(b *testing.B) {
	if note := latency.PageReportingNote(); note != "" {
		b.Log(note)
	}
	b.Run("1partition", func(b *testing.B) { benchReplay(b, 1, false) })
	b.Run("4partitions", func(b *testing.B) { benchReplay(b, 4, false) })
	b.Run("clientprocess-1partition", func(b *testing.B) { benchReplay(b, 1, true) })
	b.Run("clientprocess-4partitions", func(b *testing.B) { benchReplay(b, 4, true) })
}

// envBenchFetcher makes this test binary the fetching client of
// BenchmarkReplay1KiB's clientprocess variants: "addr|topic|partitions".
const envBenchFetcher = "BROKERLESS_LOGD_BENCH_FETCHER"

// runBenchFetcher fetches the partitions whole (fetchAll) each time a
// line arrives on stdin, and answers "<record bytes> <seconds>", or
// "failed: <error>".
func runBenchFetcher(spec string) int {
	parts := strings.Split(spec, "|")
	var partitions int
	fmt.Sscan(parts[2], &partitions)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		start := time.Now()
		bytes, err := fetchAll(parts[0], parts[1], partitions)
		if err != nil {
			fmt.Println("failed:", err)
			continue
		}
		fmt.Println(bytes, time.Since(start).Seconds())
	}
	return 0
}

// benchChild starts this test binary again with env (NAME=value) added
// to its environment, stopped when b ends, and returns its stdin and
// stdout.
func benchChild(b *testing.B, env string) (io.Writer, *bufio.Reader) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close(); cmd.Wait() })
	return w, bufio.NewReader(r)
}

// fetcherProcess starts runBenchFetcher in a child process (this test
// binary again) and returns fetchRate's equivalent through it.
func fetcherProcess(b *testing.B, addr, topic string, partitions int) func() (float64, float64) {
	w, out := benchChild(b, fmt.Sprintf("%s=%s|%s|%d", envBenchFetcher, addr, topic, partitions))
	return func() (float64, float64) {
		fmt.Fprintln(w, "go")
		line, err := out.ReadString('\n')
		var bytes, secs float64
		if _, serr := fmt.Sscan(line, &bytes, &secs); err != nil || serr != nil || secs <= 0 {
			b.Fatalf("fetching process: %q %v", line, err)
		}
		return bytes / secs, bytes
	}
}

func benchReplay(b *testing.B, partitions int, proc bool) {
	ts := startServer(b, b.TempDir())
	cl := newClient(b, ts.addr, kgo.DefaultProduceTopic("replay"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(b, cl, "replay", int32(partitions))
	values := randomValues(1)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	fetch := func() (float64, float64) { return fetchRate(b, ts.addr, "replay", partitions) }
	if proc {
		fetch = fetcherProcess(b, ts.addr, "replay", partitions)
	}
	var dirs []string
	for p := range partitions {
		dirs = append(dirs, filepath.Join(ts.dir, fmt.Sprintf("replay-%d", p)))
	}
	const raw, zc, cp = 0, 1, 2
	var rates, cpus, ratios, busy [3][]float64
	var disk [3]diskUse
	var sizes []float64
	for round := range benchRounds {
		for i := range 3 {
			side := (round + i) % 3
			for _, d := range dirs {
				evict(b, d)
			}
			ts.noZeroCopy.Store(side == cp)
			cpu0 := latency.ProcessCPU()
			watch := watchDisk()
			var rate, bytes float64
			if side == raw {
				rate, bytes = rawReadRate(b, dirs...)
			} else {
				rate, bytes = fetch()
			}
			rates[side] = append(rates[side], rate)
			if side == raw {
				sizes = append(sizes, bytes)
			}
			cpus[side] = append(cpus[side], (latency.ProcessCPU()-cpu0).Seconds()*1e3/(bytes/(1<<30)))
			disk[side] = watch.done(bytes)
			busy[side] = append(busy[side], disk[side].busy)
		}
		for _, side := range []int{zc, cp} {
			ratios[side] = append(ratios[side], rates[side][round]/rates[raw][round])
		}
		b.Logf("round %d (first: %s): raw %.0f MiB/s, sendfile %.0f MiB/s (x%.2f), copy %.0f MiB/s (x%.2f)", round,
			[]string{"raw", "sendfile", "copy"}[round%3], rates[raw][round]/(1<<20), rates[zc][round]/(1<<20), ratios[zc][round], rates[cp][round]/(1<<20), ratios[cp][round])
		b.Logf("  raw: %v; sendfile: %v; copy: %v", disk[raw], disk[zc], disk[cp])
	}
	b.ReportMetric(median(sizes)/(1<<20), "MiB-on-disk")
	b.ReportMetric(median(rates[zc])/(1<<20), "MiB/s")
	b.ReportMetric(median(rates[cp])/(1<<20), "copy-MiB/s")
	b.ReportMetric(median(rates[raw])/(1<<20), "raw-MiB/s")
	b.ReportMetric(median(ratios[zc]), "x-raw")
	b.ReportMetric(slices.Min(ratios[zc]), "x-raw-min")
	b.ReportMetric(slices.Max(ratios[zc]), "x-raw-max")
	b.ReportMetric(median(ratios[cp]), "copy-x-raw")
	b.ReportMetric(median(cpus[zc]), "cpu-ms/GiB")
	b.ReportMetric(median(cpus[cp]), "copy-cpu-ms/GiB")
	b.ReportMetric(median(cpus[raw]), "raw-cpu-ms/GiB")
	if disk[raw].ok {
		b.ReportMetric(median(busy[zc]), "disk-busy")
		b.ReportMetric(median(busy[raw]), "raw-disk-busy")
	}
	b.ReportMetric(0, "ns/op")
}

// fetchBytes is the size of one fetch: franz-go's default per partition.
const fetchBytes = 1 << 20

// fetchRate fetches partitions 0 to partitions-1 of a topic from offset
// 0 to their ends, each Fetch request asking for all those not done yet,
// up to fetchBytes each, on a plain connection that reads each response
// straight into one reused buffer (a client's network layer, without the
// per-record decoding a consumer library adds), and returns record
// bytes per second, and record bytes.
func fetchRate(b *testing.B, addr, topic string, partitions int) (float64, float64) {
	start := time.Now()
	bytes, err := fetchAll(addr, topic, partitions)
	if err != nil {
		b.Fatal(err)
	}
	return float64(bytes) / time.Since(start).Seconds(), float64(bytes)
}

// fetchAll is fetchRate's work: it returns the record bytes fetched.
func fetchAll(addr, topic string, partitions int) (int64, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	r := c // unbuffered: each response is read once, straight into frame
	var frame, out []byte
	offsets := make([]int64, partitions)
	done := make([]bool, partitions)
	var bytes int64
	for corr, left := int32(0), partitions; left > 0; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, int32(partitions*fetchBytes), 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range partitions {
			if !done[p] {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), offsets[p], fetchBytes
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
		out = append(out[:0], 0, 0, 0, 0, 0, 1, 0, 11, 0, 0, 0, 0, 0, 0)
		binary.BigEndian.PutUint32(out[8:], uint32(corr))
		out = req.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return bytes, err
		}
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return bytes, err
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			return bytes, err
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(11)
		if err := resp.ReadFrom(frame[4:]); err != nil {
			return bytes, err
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				return bytes, fmt.Errorf("fetch error %d", p.ErrorCode)
			}
			bytes += int64(len(p.RecordBatches))
			if len(p.RecordBatches) > 0 {
				offsets[p.Partition] = nextOffset(p.RecordBatches)
			}
			if len(p.RecordBatches) == 0 || offsets[p.Partition] >= p.HighWatermark {
				done[p.Partition] = true
				left--
			}
		}
	}
	return bytes, nil
}

// nextOffset is the offset after the last record batch in a record set.
func nextOffset(set []byte) int64 {
	var next int64
	for len(set) >= 61 {
		var rb kmsg.RecordBatch
		n := 12 + int(int32(uint32(set[8])<<24|uint32(set[9])<<16|uint32(set[10])<<8|uint32(set[11])))
		if n > len(set) || rb.ReadFrom(set[:n]) != nil {
			break
		}
		next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		set = set[n:]
	}
	return next
}

// evict drops a directory's files from the page cache.
func evict(b *testing.B, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		dropCache(f)
		f.Close()
	}
}

// rawReadRate reads every .log file of the partition directories
// sequentially and returns bytes per second, and bytes.
func rawReadRate(b *testing.B, dirs ...string) (float64, float64) {
	buf := make([]byte, 1<<20)
	var n int64
	start := time.Now()
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".log") {
				continue
			}
			f, err := os.Open(filepath.Join(dir, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			for {
				k, err := f.Read(buf)
				n += int64(k)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
		}
	}
	return float64(n) / time.Since(start).Seconds(), float64(n)
}

// BenchmarkLatency: produce→consume latency of single records at a fixed
// rate (1,000/s, open loop), acks=all, the consumer long-polling.
func BenchmarkLatency(b *testing.B) {
	ts := startServer(b, b.TempDir())
	p := newClient(b, ts.addr, kgo.DefaultProduceTopic("lat"), kgo.ProducerLinger(0))
	createTopic(b, p, "lat", 1)
	c := newClient(b, ts.addr, kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(time.Second))
	ctx := context.Background()
	const rate = 1000
	go func() {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			due := start.Add(time.Duration(i) * time.Second / rate)
			time.Sleep(time.Until(due))
			p.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(due.UnixNano())), Timestamp: due}, nil)
		}
	}()
	h := latency.New()
	for int(h.Count()) < b.N {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var due int64
			fmt.Sscan(string(r.Value), &due)
			h.Record(time.Since(time.Unix(0, due)))
		})
	}
	b.ReportMetric(float64(h.Quantile(0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(h.Quantile(0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(h.Quantile(0.999).Microseconds()), "p99.9-µs")
	b.ReportMetric(0, "ns/op")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
