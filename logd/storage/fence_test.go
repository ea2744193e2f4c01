package storage

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// failOps is a vfs.Faults rule failing the given operations on every
// file with err.
func failOps(err error, ops ...vfs.Op) vfs.Rule {
	return func(op vfs.Op, _ string) error {
		for _, o := range ops {
			if o == op {
				return err
			}
		}
		return nil
	}
}

// TestFenceAndUnfence: a partition whose disk fills up (or whose fsync
// fails) is fenced — every append fails at once with ErrLogFailed and
// Store.Fenced names it — stays fenced while the fault lasts, and
// Maintain unfences it once the fault is gone, without a restart:
// every acknowledged record is still there at its offset, new appends
// continue the log, and what Unfence kept survives a power loss.
func TestFenceAndUnfence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy FsyncPolicy
		err    error
		ops    []vfs.Op
		// keepsUnsynced: records written before the fault but never
		// fsynced survive the unfencing (only a write failed).
		keepsUnsynced bool
	}{
		{"always/write-ENOSPC", FsyncAlways, syscall.ENOSPC, []vfs.Op{vfs.OpWrite}, true},
		{"always/fsync-EIO", FsyncAlways, syscall.EIO, []vfs.Op{vfs.OpSync}, false},
		{"always/roll-ENOSPC", FsyncAlways, syscall.ENOSPC, []vfs.Op{vfs.OpOpen, vfs.OpWrite, vfs.OpSync}, false},
		{"interval/write-ENOSPC", FsyncInterval, syscall.ENOSPC, []vfs.Op{vfs.OpWrite}, true},
		{"never/fsync-EIO", FsyncNever, syscall.EIO, []vfs.Op{vfs.OpWrite, vfs.OpSync}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lazy := vfs.NewLazy()
			faults := vfs.NewFaults(lazy)
			clk := newClock()
			cfg := Config{Dir: "/data", FS: faults, Fsync: tc.policy, FsyncInterval: time.Hour,
				SegmentBytes: 2 << 10, IndexIntervalBytes: 256, MaintenanceInterval: -1, Now: clk.now}
			s, l := openPartition(t, cfg)
			var acked []string
			appendOne := func(tag string) error {
				r, err := l.Append(simpleBatch(t, tag, 2, clk.ms()))
				if err == nil {
					err = l.WaitDurable(t.Context(), r.LastOffset)
				}
				if err == nil {
					acked = append(acked, tag+"-0", tag+"-1")
				}
				return err
			}
			for i := range 20 {
				if err := appendOne(fmt.Sprintf("a%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.policy != FsyncAlways {
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				// Acknowledged, not fsynced: a power loss could take them;
				// a failed write alone must not.
				for i := range 3 {
					if err := appendOne(fmt.Sprintf("u%d", i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			synced := len(acked)
			if tc.policy != FsyncAlways && !tc.keepsUnsynced {
				synced -= 6
			}

			faults.SetRule(failOps(tc.err, tc.ops...))
			if tc.name == "always/roll-ENOSPC" {
				// Fill the segment to the brim first, so the next append rolls.
				faults.SetRule(nil)
				for l.Size()+int64(len(simpleBatch(t, "x", 2, 0))) <= cfg.SegmentBytes {
					if err := appendOne(fmt.Sprintf("f%d", len(acked))); err != nil {
						t.Fatal(err)
					}
				}
				synced = len(acked)
				faults.SetRule(failOps(tc.err, tc.ops...))
			}
			err := appendOne("lost")
			if tc.policy == FsyncNever && err == nil {
				err = l.Sync() // nothing fsyncs under never but a roll; make it try
			}
			if !errors.Is(err, ErrLogFailed) {
				t.Fatalf("append on a failing disk: %v, want ErrLogFailed", err)
			}
			for range 3 {
				start := time.Now()
				if _, err := l.Append(simpleBatch(t, "fenced", 1, clk.ms())); !errors.Is(err, ErrLogFailed) {
					t.Fatalf("append to a fenced partition: %v, want ErrLogFailed", err)
				}
				if d := time.Since(start); d > time.Second {
					t.Fatalf("a fenced partition took %v to refuse an append", d)
				}
			}
			if got := s.Fenced(); len(got) != 1 || got[0] != (TopicPartition{"t", 0}) {
				t.Fatalf("Fenced() = %v, want t/0", got)
			}
			if err := s.Maintain(clk.now()); !errors.Is(err, ErrLogFailed) {
				t.Fatalf("Maintain with the fault still there: %v, want ErrLogFailed", err)
			}
			if !l.Fenced() {
				t.Fatal("unfenced while the disk still fails")
			}

			faults.SetRule(nil) // space is back
			if err := s.Maintain(clk.now()); err != nil {
				t.Fatalf("Maintain once the fault is gone: %v", err)
			}
			if l.Fenced() || len(s.Fenced()) != 0 {
				t.Fatal("still fenced once the fault is gone")
			}
			checkValues(t, l, acked[:synced])
			acked = acked[:synced]
			for i := range 5 {
				if err := appendOne(fmt.Sprintf("b%d", i)); err != nil {
					t.Fatalf("append after unfencing: %v", err)
				}
			}
			checkValues(t, l, acked)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			crash(s)
			cfg.FS = lazy.Crash()
			s2, l2 := openPartition(t, cfg)
			defer s2.Close()
			checkValues(t, l2, acked)
		})
	}
}

// checkValues: the log holds exactly want, in order from offset 0.
func checkValues(t *testing.T, l *Log, want []string) {
	t.Helper()
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.offset != int64(i) || string(r.value) != want[i] {
			t.Fatalf("record %d: %q at offset %d, want %q", i, r.value, r.offset, want[i])
		}
	}
}

// TestUnfenceDuringFsync: an fsync still in flight when another one
// failed, and when Unfence then cut and reloaded the partition, must
// not mark as durable offsets the reload cut away. It did: the durable
// point ended past the log end, so the next appends, at those offsets
// again, counted as fsynced and the next Sync skipped them.
func TestUnfenceDuringFsync(t *testing.T) {
	faults := vfs.NewFaults(vfs.NewLazy())
	clk := newClock()
	cfg := Config{Dir: "/data", FS: faults, Fsync: FsyncInterval, FsyncInterval: time.Hour, MaintenanceInterval: -1, Now: clk.now}
	s, l := openPartition(t, cfg)
	defer s.Close()
	if _, err := l.Append(simpleBatch(t, "a", 2, clk.ms())); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		syncs int // of segment files
		held  = make(chan struct{})
		hold  = make(chan struct{})
	)
	// The first fsync of a segment waits for hold; the second fails.
	faults.SetRule(func(op vfs.Op, name string) error {
		if op != vfs.OpSync || !strings.HasSuffix(name, logSuffix) {
			return nil
		}
		mu.Lock()
		syncs++
		n := syncs
		mu.Unlock()
		switch n {
		case 1:
			close(held)
			<-hold
		case 2:
			return syscall.EIO
		}
		return nil
	})
	inFlight := make(chan error)
	go func() { inFlight <- l.Sync() }()
	<-held
	if err := l.Sync(); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("the failing fsync: %v, want ErrLogFailed", err)
	}
	unfenced := make(chan error)
	go func() { unfenced <- l.Unfence() }()
	// Unfence holds the log and waits for the fsync in flight.
	deadline := time.Now().Add(10 * time.Second)
	for l.mu.TryLock() {
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("Unfence never took the log")
		}
		time.Sleep(time.Millisecond)
	}
	close(hold)
	if err := <-unfenced; err != nil {
		t.Fatal(err)
	}
	<-inFlight // its error, if any, is the fence it found
	l.mu.Lock()
	l.ackMu.Lock()
	end, durable := l.end, l.durable
	l.ackMu.Unlock()
	l.mu.Unlock()
	if durable > end {
		t.Fatalf("durable up to %d, past the log end %d", durable, end)
	}
	if _, err := l.Append(simpleBatch(t, "b", 2, clk.ms())); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	before := syncs
	mu.Unlock()
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	after := syncs
	mu.Unlock()
	if after == before {
		t.Fatal("Sync after the reload did not fsync the new appends")
	}
}

// TestWaitAppendedAcrossUnfence: an acks=all answer waits for its batch
// with WaitAppended, which fails when the partition was fenced and
// reloaded since the append. Unfence cuts what no fsync covered, and the
// next appends take the cut batch's offsets; WaitDurable, given only the
// offset, then vouched for them — a produce whose wait began after the
// reload (its connection busy writing an earlier answer, or its request
// waiting on another partition first) was answered as durable while its
// records were gone.
func TestWaitAppendedAcrossUnfence(t *testing.T) {
	faults := vfs.NewFaults(vfs.NewLazy())
	clk := newClock()
	cfg := Config{Dir: "/data", FS: faults, Fsync: FsyncAlways, SegmentBytes: 1 << 20,
		MaintenanceInterval: -1, Now: clk.now}
	s, l := openPartition(t, cfg)
	defer s.Close()
	appendDurable(t, l, simpleBatch(t, "kept", 2, clk.ms()))

	faults.SetRule(failOps(syscall.EIO, vfs.OpSync))
	lost, err := l.Append(simpleBatch(t, "lost", 2, clk.ms()))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); !errors.Is(err, ErrLogFailed) { // the group commit's fsync fails: fenced
		t.Fatalf("fsync on a failing disk: %v, want ErrLogFailed", err)
	}
	faults.SetRule(nil)
	if err := s.Maintain(clk.now()); err != nil || l.Fenced() {
		t.Fatalf("Maintain did not unfence: %v", err)
	}
	other := appendDurable(t, l, simpleBatch(t, "other", 2, clk.ms()))
	if other.LastOffset != lost.LastOffset {
		t.Fatalf("the next batch took offsets up to %d, the cut one had up to %d", other.LastOffset, lost.LastOffset)
	}
	if err := l.WaitAppended(t.Context(), lost); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("waiting for the cut batch after the reload: %v, want ErrLogFailed", err)
	}
	if err := l.WaitAppended(t.Context(), other); err != nil {
		t.Fatalf("waiting for the batch appended after the reload: %v", err)
	}
}
