package storage

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// fsyncSignal reports each fsync on a channel.
type fsyncSignal chan int64

func (c fsyncSignal) OnFsync(_ string, _ int32, _ time.Duration, bytes int64) {
	select {
	case c <- bytes:
	default:
	}
}

func TestDurabilityPolicies(t *testing.T) {
	t.Run("always", func(t *testing.T) {
		clk := newClock()
		s, l := openPartition(t, testConfig(t, clk))
		defer s.Close()
		upd := l.Updated()
		res, err := l.Append(simpleBatch(t, "a", 2, clk.ms()))
		if err != nil {
			t.Fatal(err)
		}
		// Until the fsync, readers see nothing of the batch.
		if hwm := l.HighWatermark(); hwm != 0 && hwm != 2 {
			t.Fatalf("high watermark %d", hwm)
		}
		if l.HighWatermark() == 0 {
			if b, err := l.Read(0, 100); err != nil || len(b) != 0 {
				t.Fatalf("read before fsync: %d bytes, %v", len(b), err)
			}
		}
		if err := l.WaitDurable(t.Context(), res.LastOffset); err != nil {
			t.Fatal(err)
		}
		if l.HighWatermark() != 2 {
			t.Fatalf("high watermark %d after WaitDurable", l.HighWatermark())
		}
		select {
		case <-upd:
		case <-time.After(5 * time.Second):
			t.Fatal("Updated not closed")
		}
		// A wait on an offset never appended ends with its context.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		if err := l.WaitDurable(ctx, 100); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait past the end: %v", err)
		}
	})
	t.Run("never", func(t *testing.T) {
		clk := newClock()
		cfg := testConfig(t, clk)
		cfg.Fsync = FsyncNever
		s, l := openPartition(t, cfg)
		defer s.Close()
		res, _ := l.Append(simpleBatch(t, "a", 2, clk.ms()))
		if l.HighWatermark() != 2 {
			t.Fatalf("high watermark %d", l.HighWatermark())
		}
		if err := l.WaitDurable(t.Context(), res.LastOffset); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("interval", func(t *testing.T) {
		clk := newClock()
		cfg := testConfig(t, clk)
		cfg.Fsync = FsyncInterval
		cfg.FsyncInterval = time.Millisecond
		fs := make(fsyncSignal, 1)
		cfg.Hooks = []Hook{fs}
		s, l := openPartition(t, cfg)
		defer s.Close()
		l.Append(simpleBatch(t, "a", 2, clk.ms()))
		if l.HighWatermark() != 2 {
			t.Fatalf("high watermark %d", l.HighWatermark())
		}
		select {
		case <-fs:
		case <-time.After(5 * time.Second):
			t.Fatal("no fsync within the interval")
		}
	})
}

func TestClosedLog(t *testing.T) {
	clk := newClock()
	s, l := openPartition(t, testConfig(t, clk))
	res, _ := l.Append(simpleBatch(t, "a", 1, clk.ms()))
	s.Close()
	if _, err := l.Append(simpleBatch(t, "a", 1, clk.ms())); !errors.Is(err, ErrClosed) {
		t.Errorf("append: %v", err)
	}
	if _, err := l.Read(0, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("read: %v", err)
	}
	// What Close flushed is durable.
	if err := l.WaitDurable(t.Context(), res.LastOffset); err != nil {
		t.Errorf("wait: %v", err)
	}
	if _, err := s.Partition("t", 0); !errors.Is(err, ErrClosed) {
		t.Errorf("partition: %v", err)
	}
}

// TestFsyncDoesNotWaitForAWriteInProgress: the group commit's fsync
// ends while a later append's write is still in progress, and marks
// what it covered durable without waiting for that write (which holds
// the log's writer lock): it did wait, the disk idle meanwhile.
func TestFsyncDoesNotWaitForAWriteInProgress(t *testing.T) {
	faults := vfs.NewFaults(vfs.NewLazy())
	clk := newClock()
	var (
		mu             sync.Mutex
		writes, syncs  int // of segment files
		held, released = make(chan struct{}), make(chan struct{})
	)
	s, l := openPartition(t, Config{Dir: "/data", FS: faults, Fsync: FsyncAlways, MaintenanceInterval: -1, Now: clk.now})
	defer s.Close()
	// From here, the first fsync waits until the second write is in
	// progress; the second write waits for released.
	faults.SetRule(func(op vfs.Op, name string) error {
		if !strings.HasSuffix(name, logSuffix) {
			return nil
		}
		mu.Lock()
		var n int
		switch op {
		case vfs.OpWrite:
			writes++
			n = writes
		case vfs.OpSync:
			syncs++
			n = -syncs
		}
		mu.Unlock()
		switch n {
		case 2:
			close(held)
			<-released
		case -1:
			<-held
		}
		return nil
	})
	first, err := l.Append(simpleBatch(t, "a", 2, clk.ms()))
	if err != nil {
		t.Fatal(err)
	}
	appended := make(chan error, 1)
	go func() {
		_, err := l.Append(simpleBatch(t, "b", 2, clk.ms()))
		appended <- err
	}()
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = l.WaitDurable(ctx, first.LastOffset)
	close(released)
	if err != nil {
		t.Fatalf("the first append, fsynced while the second one writes: %v", err)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
}

// behindFS records the write-behind hints its segment files get.
type behindFS struct {
	*vfs.Lazy
	mu    sync.Mutex
	hints [][2]int64 // offset, length
}

func (b *behindFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := b.Lazy.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return behindFile{f, b}, nil
}

type behindFile struct {
	vfs.File
	fs *behindFS
}

func (f behindFile) WriteBehind(off, n int64) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.fs.hints = append(f.fs.hints, [2]int64{off, n})
}

// TestWriteBehind: under FsyncAlways each appended batch is handed to
// the file as a write-behind hint, at the place it was written; under
// FsyncInterval and FsyncNever (the kernel writes back on its own
// schedule) none is until writeBehindBytes of whole pages have
// accumulated, and then those pages, from where the last hint ended.
func TestWriteBehind(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncInterval, FsyncNever} {
		bfs := &behindFS{Lazy: vfs.NewLazy()}
		clk := newClock()
		s, l := openPartition(t, Config{Dir: "/data", FS: bfs, Fsync: policy, FsyncInterval: time.Hour, MaintenanceInterval: -1, Now: clk.now})
		var want [][2]int64
		var pos, hinted int64
		big := strings.Repeat("x", 100<<10) // 3 records: the 4th such batch passes writeBehindBytes
		for _, v := range []string{"a", "bb", big, big, big, big, "c"} {
			b := simpleBatch(t, v, 3, clk.ms())
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
			pos += int64(len(b))
			switch {
			case policy == FsyncAlways:
				want = append(want, [2]int64{pos - int64(len(b)), int64(len(b))})
			case pos&^(4<<10-1)-hinted >= 1<<20:
				end := pos &^ (4<<10 - 1)
				want = append(want, [2]int64{hinted, end - hinted})
				hinted = end
			}
		}
		if policy != FsyncAlways && len(want) != 1 {
			t.Fatalf("%v: the test expects one hint, not %v", policy, want)
		}
		bfs.mu.Lock()
		got := bfs.hints
		bfs.mu.Unlock()
		if !slices.Equal(got, want) {
			t.Errorf("%v: write-behind hints %v, want %v", policy, got, want)
		}
		s.Close()
	}
}
