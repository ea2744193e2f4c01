package storage

import (
	"errors"
	"io/fs"
	"testing"
	"time"
)

func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	s := batchSpec{ts: ts, pid: pid, epoch: epoch, firstSeq: seq}
	for range n {
		s.recs = append(s.recs, rec{value: []byte("v")})
	}
	return makeBatch(t, s)
}

func TestIdempotentProducer(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	s, l := openPartition(t, cfg)
	ts := clk.ms()
	type step struct {
		pid     int64
		epoch   int16
		seq     int32
		n       int
		want    error
		base    int64 // expected base offset
		dup     bool
		comment string
	}
	steps := []step{
		{1, 0, 0, 3, nil, 0, false, "first batch"},
		{1, 0, 3, 2, nil, 3, false, "next"},
		{1, 0, 0, 3, nil, 0, true, "retry of the first"},
		{1, 0, 3, 2, nil, 3, true, "retry of the second"},
		{2, 5, 100, 1, nil, 5, false, "another producer, any first sequence"},
		{1, 0, 6, 1, ErrOutOfOrderSequence, 0, false, "gap"},
		{1, 0, 4, 1, ErrOutOfOrderSequence, 0, false, "overlap, not a retry"},
		{1, 0, 5, 1, nil, 6, false, "in order again"},
		{2, 4, 101, 1, ErrInvalidProducerEpoch, 0, false, "stale epoch"},
		{2, 6, 3, 1, ErrOutOfOrderSequence, 0, false, "new epoch must start at 0"},
		{2, 6, 0, 2, nil, 7, false, "new epoch"},
		{2, 5, 100, 1, ErrInvalidProducerEpoch, 0, false, "retry from the old epoch"},
		{-1, -1, -1, 2, nil, 9, false, "not idempotent"},
		{-1, -1, -1, 2, nil, 11, false, "not idempotent, never a duplicate"},
	}
	run := func(steps []step) {
		for _, st := range steps {
			res, err := l.Append(idemBatch(t, st.pid, st.epoch, st.seq, st.n, ts))
			if !errors.Is(err, st.want) {
				t.Fatalf("%s: %v, want %v", st.comment, err, st.want)
			}
			if err == nil && (res.BaseOffset != st.base || res.LastOffset != st.base+int64(st.n)-1 || res.Duplicate != st.dup) {
				t.Fatalf("%s: %+v, want base %d dup %v", st.comment, res, st.base, st.dup)
			}
		}
	}
	run(steps)
	if l.EndOffset() != 13 {
		t.Fatalf("end %d, want 13", l.EndOffset())
	}
	// The state survives a clean reopen (snapshot) and a crash (replay).
	after := []step{
		{1, 0, 5, 1, nil, 6, true, "retry after reopen"},
		{2, 6, 0, 2, nil, 7, true, "retry after reopen"},
		{1, 0, 7, 1, ErrOutOfOrderSequence, 0, false, "gap after reopen"},
		{2, 5, 0, 1, ErrInvalidProducerEpoch, 0, false, "stale epoch after reopen"},
	}
	s.Close()
	s, l = openPartition(t, cfg)
	run(after)
	crash(s)
	s, l = openPartition(t, cfg)
	run(after)
	run([]step{{1, 0, 6, 1, nil, 13, false, "continues"}})
	s.Close()
	// Without the snapshot the state is rebuilt from the log.
	if err := removeFile(l.dir, producerStateFile); err != nil {
		t.Fatal(err)
	}
	s, l = openPartition(t, cfg)
	defer s.Close()
	run([]step{
		after[0], after[1],
		{1, 0, 8, 1, ErrOutOfOrderSequence, 0, false, "gap after rebuild"},
		after[3],
		{1, 0, 6, 1, nil, 13, true, "retry of the last"},
	})
}

func TestProducerWindowAndBounds(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.MaxProducers = 3
	cfg.ProducerExpiry = time.Hour
	ev := &evictions{}
	cfg.Hooks = []Hook{ev}
	s, l := openPartition(t, cfg)
	defer s.Close()
	for seq := range int32(7) {
		appendDurable(t, l, idemBatch(t, 1, 0, seq, 1, clk.ms()))
	}
	// Only the last five batches are remembered: an older retry is out
	// of order.
	for seq, want := range map[int32]error{0: ErrOutOfOrderSequence, 1: ErrOutOfOrderSequence, 2: nil, 6: nil} {
		res, err := l.Append(idemBatch(t, 1, 0, seq, 1, clk.ms()))
		if !errors.Is(err, want) || err == nil && (!res.Duplicate || res.BaseOffset != int64(seq)) {
			t.Errorf("retry of seq %d: %+v %v", seq, res, err)
		}
	}
	// MaxProducers: the producer idle longest is forgotten.
	for pid := int64(2); pid <= 4; pid++ {
		clk.add(time.Second)
		appendDurable(t, l, idemBatch(t, pid, 0, 0, 1, clk.ms()))
	}
	if ev.ids != "1 " {
		t.Fatalf("evicted %q, want producer 1", ev.ids)
	}
	// Expiry: a producer idle past ProducerExpiry is forgotten, so its
	// next batch is accepted whatever its sequence.
	clk.add(2 * time.Hour)
	if _, err := l.Append(idemBatch(t, 2, 0, 50, 1, clk.ms())); err != nil {
		t.Fatal(err)
	}
	s.Maintain(clk.now())
	l.mu.Lock()
	n := len(l.producers.m)
	l.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d producers after expiry, want 1", n)
	}
}

type evictions struct{ ids string }

func (e *evictions) OnProducerEvict(_ string, _ int32, id int64) { e.ids += itoa(id) + " " }

// TestReplayedProducerKeptFromRecovery: a producer whose records carry
// old timestamps (a replay of last year's events) and that appended just
// before a crash is remembered after recovery rebuilds it from the log:
// a retry of its last batch is a duplicate, and a batch that skips ahead
// is out of order, not accepted as from a forgotten producer. Dating it
// by its records' timestamps expired it at once.
func TestReplayedProducerKeptFromRecovery(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	s, l := openPartition(t, cfg)
	old := clk.t.Add(-365 * 24 * time.Hour).UnixMilli()
	for seq := int32(0); seq < 6; seq += 3 {
		if _, err := l.Append(idemBatch(t, 7, 0, seq, 3, old)); err != nil {
			t.Fatal(err)
		}
	}
	crash(s)
	if err := removeFile(l.dir, producerStateFile); err != nil && !errors.Is(err, fs.ErrNotExist) { // rebuilt from the log alone
		t.Fatal(err)
	}
	s, l = openPartition(t, cfg)
	defer s.Close()
	res, err := l.Append(idemBatch(t, 7, 0, 3, 3, old))
	if err != nil || !res.Duplicate || res.BaseOffset != 3 {
		t.Fatalf("retry of the last batch after recovery: %+v, %v; want a duplicate at offset 3", res, err)
	}
	if _, err := l.Append(idemBatch(t, 7, 0, 9, 3, old)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a batch past a lost one after recovery: %v, want ErrOutOfOrderSequence", err)
	}
	clk.add(DefaultProducerExpiry + time.Second)
	s.Maintain(clk.now())
	if _, err := l.Append(idemBatch(t, 7, 0, 9, 3, old)); err != nil {
		t.Fatalf("after a whole expiry with no append, the producer is forgotten: %v", err)
	}
}
