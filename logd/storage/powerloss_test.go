package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestPowerLoss puts a Store on vfs.Lazy, a disk that keeps only what a
// completed fdatasync (and, for directory entries, a directory fsync)
// made durable, appends from several goroutines and cuts the power at a
// random moment, over and over; each time it reopens the Store and
// checks what survived against what each policy promises:
//
//   - always: every acknowledged record survives, and readers never saw
//     a record the crash took back (the high watermark is durable);
//   - interval: a record is lost only if no fdatasync of its segment
//     completed after it was acknowledged (at most what was acknowledged
//     since the last completed sync);
//   - never: the same, and only records of the active segment are lost:
//     sealed segments were fdatasynced when they rolled.
//
// Some cycles kill the process instead (SIGKILL: the page cache
// survives), and nothing appended may be lost; what recovery then
// serves must survive a later power loss. Under every policy the log
// that survives is a prefix of what was
// appended: contiguous offsets, each record the one appended there.
// The torn variants keep a random part of the unsynced writes instead
// of none (a page cache that had written back part of its dirty data):
// recovery must cut the torn batches.
func TestPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		policy FsyncPolicy
		torn   bool
	}{
		{FsyncAlways, false}, {FsyncAlways, true},
		{FsyncInterval, false}, {FsyncInterval, true},
		{FsyncNever, false}, {FsyncNever, true},
	} {
		name := tc.policy.String()
		if tc.torn {
			name += "-torn"
		}
		t.Run(name, func(t *testing.T) { powerLoss(t, tc.policy, tc.torn) })
	}
}

const (
	powerLossWorkers = 3
	powerLossDir     = "/data"
)

// plRec is a record appended in a power-loss test.
type plRec struct {
	value       string
	acked       bool
	ackSeq      int64 // the Lazy's Seq once acknowledged
	counted     bool  // in the count of acknowledged records
	recovered   bool  // survived a crash: recovery fdatasynced it
	mustSurvive bool  // by the policy, decided at the crash
}

// plModel is what was appended, by offset.
type plModel struct {
	mu       sync.Mutex
	recs     map[int64]*plRec
	inflight map[string]bool // values of batches whose Append has not returned
	failed   map[string]bool // values of batches whose Append failed
}

func powerLoss(t *testing.T, policy FsyncPolicy, torn bool) {
	cycles := 30
	if testing.Short() {
		cycles = 8
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	fsys := vfs.NewLazy()
	if torn {
		fsys = vfs.NewLazyTorn(rand.New(rand.NewPCG(seed, 2)))
	}
	syncs := &fsyncCounter{}
	cfg := Config{
		Dir: powerLossDir, Fsync: policy, FsyncInterval: 2 * time.Millisecond,
		SegmentBytes: 4 << 10, IndexIntervalBytes: 256, MaintenanceInterval: -1,
		Hooks: []Hook{syncs},
	}
	m := &plModel{recs: map[int64]*plRec{}, inflight: map[string]bool{}, failed: map[string]bool{}}
	var acked, lost, kills int
	hwm := int64(0)
	for cycle := 0; ; cycle++ {
		cfg.FS = fsys
		s, l := openPartition(t, cfg)
		acked, lost = checkPowerLoss(t, l, m, policy, hwm, acked, lost)
		if cycle == cycles {
			s.Close()
			break
		}
		// Often early, even before the first append: right after a
		// recovery is when what recovery did (or forgot) is exposed.
		crashAfter := rng.IntN(300)
		if rng.IntN(3) == 0 {
			crashAfter = rng.IntN(4)
		}
		kill := rng.IntN(3) == 0
		var next *vfs.Lazy
		// Under FsyncInterval every other cycle runs until the timer has
		// fsynced, so some crashes come after a timer sync.
		before := syncs.n.Load()
		ready := func() bool { return policy != FsyncInterval || cycle%2 == 0 || syncs.n.Load() > before }
		hwm, next = appendUntilCrash(t, l, fsys, m, cycle, crashAfter, kill, ready)
		s.Close() // the crashed process's goroutines stop; its writes fail
		if kill {
			kills++
		}
		markMustSurvive(t, next, l, m, policy, kill)
		fsys = next
	}
	t.Logf("%d power losses, %d kills: %d records acknowledged, %d of them lost (allowed by %s), %d Log fsyncs",
		cycles-kills, kills, acked, lost, policy, syncs.n.Load())
	if acked == 0 {
		t.Fatal("nothing was acknowledged: the test proved nothing")
	}
	switch {
	case policy == FsyncInterval && syncs.n.Load() == 0:
		t.Fatal("the interval timer never fsynced")
	case policy == FsyncNever && syncs.n.Load() != 0:
		t.Fatalf("%d fsyncs under FsyncNever", syncs.n.Load())
	}
}

// appendUntilCrash appends from several goroutines and cuts the power
// (or, with kill, kills the process) once crashAfter batches were
// acknowledged and ready says so. It returns the high watermark readers
// could see just before, and the file system of the next process.
func appendUntilCrash(t *testing.T, l *Log, fsys *vfs.Lazy, m *plModel, cycle, crashAfter int, kill bool, ready func() bool) (int64, *vfs.Lazy) {
	var (
		done    = make(chan struct{})
		once    sync.Once
		hwm     int64
		next    *vfs.Lazy
		count   atomic.Int64
		wg      sync.WaitGroup
		ctx     = context.Background()
		crashed = func() {
			once.Do(func() {
				hwm = l.HighWatermark()
				if kill {
					next = fsys.Kill()
				} else {
					next = fsys.Crash()
				}
				close(done)
			})
		}
	)
	if crashAfter == 0 && ready() {
		crashed()
	}
	for w := range powerLossWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-done:
					return
				default:
				}
				n := 1 + seq%4
				spec := batchSpec{ts: 1, pid: -1, epoch: -1, firstSeq: -1}
				var values []string
				for j := range n {
					v := fmt.Sprintf("c%d-w%d-s%d-%d-%s", cycle, w, seq, j, strings.Repeat("x", 40*j))
					values = append(values, v)
					spec.recs = append(spec.recs, rec{value: []byte(v)})
				}
				m.mu.Lock()
				for _, v := range values {
					m.inflight[v] = true
				}
				m.mu.Unlock()
				res, err := l.Append(makeBatch(t, spec))
				m.mu.Lock()
				for j, v := range values {
					delete(m.inflight, v)
					if err == nil {
						m.recs[res.BaseOffset+int64(j)] = &plRec{value: v}
					} else {
						m.failed[v] = true
					}
				}
				m.mu.Unlock()
				if err == nil {
					err = l.WaitDurable(ctx, res.LastOffset)
				}
				if err != nil {
					crashed() // only a crash fails a Lazy operation
					return
				}
				seqNow := fsys.Seq()
				m.mu.Lock()
				for j := range values {
					r := m.recs[res.BaseOffset+int64(j)]
					r.acked, r.ackSeq = true, seqNow
				}
				m.mu.Unlock()
				if count.Add(1) >= int64(crashAfter) && ready() {
					crashed()
				}
			}
		}()
	}
	wg.Wait()
	return hwm, next
}

// markMustSurvive decides, right after the crash and before recovery,
// which records the policy promises. A kill loses nothing appended.
// After a power loss: every record that survived an earlier crash
// (recovery fdatasynced it); the acknowledged ones under FsyncAlways;
// otherwise those whose segment file completed an fdatasync after they
// were acknowledged, and under FsyncNever every record below the active
// segment.
func markMustSurvive(t *testing.T, fsys *vfs.Lazy, l *Log, m *plModel, policy FsyncPolicy, kill bool) {
	t.Helper()
	dir := filepath.Join(powerLossDir, "t-0")
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatalf("the partition directory did not survive: %v", err)
	}
	var bases []int64
	for _, e := range ents {
		if b, ok := parseSegmentName(e.Name()); ok {
			bases = append(bases, b)
		}
	}
	slices.Sort(bases)
	l.mu.Lock()
	active := l.segs[len(l.segs)-1].base
	l.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	for off, r := range m.recs {
		if kill || !r.acked {
			r.mustSurvive = kill || r.recovered
			continue
		}
		i, found := slices.BinarySearch(bases, off)
		if !found {
			i--
		}
		synced := i >= 0 && fsys.LastSync(filepath.Join(dir, segmentName(bases[i])+logSuffix)) > r.ackSeq
		r.mustSurvive = r.recovered || policy == FsyncAlways || synced || policy == FsyncNever && off < active
	}
}

// checkPowerLoss compares the reopened log with the model: a contiguous
// prefix of what was appended, every promised record there. It drops
// lost records from the model and returns the running counts of
// acknowledged and lost acknowledged records.
func checkPowerLoss(t *testing.T, l *Log, m *plModel, policy FsyncPolicy, hwm int64, acked, lost int) (int, int) {
	t.Helper()
	end := l.EndOffset()
	if policy == FsyncAlways && end < hwm {
		t.Fatalf("readers saw offsets up to %d before the crash; only %d survived", hwm, end)
	}
	recs := readAll(t, l, 0)
	if int64(len(recs)) != end {
		t.Fatalf("read %d records, log end %d", len(recs), end)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range recs {
		if r.offset != int64(i) {
			t.Fatalf("record %d at offset %d: offsets not contiguous", i, r.offset)
		}
		v := string(r.value)
		want := m.recs[r.offset]
		switch {
		case want == nil && m.inflight[v]:
			m.recs[r.offset] = &plRec{value: v} // appended as the power went
		case want == nil && m.failed[v]:
			t.Fatalf("offset %d holds %q, whose Append failed", r.offset, v)
		case want == nil:
			t.Fatalf("offset %d holds %q, never appended there", r.offset, v)
		case want.value != v:
			t.Fatalf("offset %d holds %q, appended %q", r.offset, v, want.value)
		}
		m.recs[r.offset].recovered = true
	}
	for off, r := range m.recs {
		if off < end {
			continue
		}
		if r.mustSurvive {
			t.Fatalf("record %q at offset %d (acknowledged %v) lost (log end %d after the crash); the %s policy promises it",
				r.value, off, r.acked, end, policy)
		}
		if r.acked {
			lost++
		}
		delete(m.recs, off)
	}
	for _, r := range m.recs {
		if r.acked && !r.counted {
			r.counted = true
			acked++
		}
	}
	clear(m.inflight)
	return acked, lost
}
