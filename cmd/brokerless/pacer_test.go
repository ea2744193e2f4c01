package main

import (
	"testing"
	"time"
)

func TestPacerSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	p := pacer{start: start, rate: 1000}
	tests := []struct {
		at   time.Duration
		want uint64
	}{
		{-time.Millisecond, 0},
		{0, 1},
		{999 * time.Microsecond, 1},
		{time.Millisecond, 2},
		{time.Second, 1001},
		{10 * time.Second, 10001},
	}
	for _, tt := range tests {
		if got := p.due(start.Add(tt.at)); got != tt.want {
			t.Errorf("due at %v = %d, want %d", tt.at, got, tt.want)
		}
	}
	if got := p.at(1500); !got.Equal(start.Add(1500 * time.Millisecond)) {
		t.Errorf("at(1500) = %v", got.Sub(start))
	}
}

// A pacer that fell behind owes every message due since its start: the
// schedule does not slip.
func TestPacerCatchesUp(t *testing.T) {
	start := time.Unix(0, 0)
	p := pacer{start: start, rate: 10000}
	if got := p.due(start.Add(250 * time.Millisecond)); got != 2501 {
		t.Errorf("due after a 250ms stall = %d, want 2501", got)
	}
}

func TestPacerLimit(t *testing.T) {
	start := time.Unix(0, 0)
	p := pacer{start: start, rate: 20000, limit: limitFor(20000, time.Second)}
	if p.limit != 20000 {
		t.Fatalf("limit = %d, want 20000", p.limit)
	}
	if got := p.due(start.Add(time.Hour)); got != 20000 {
		t.Errorf("due long after the end = %d, want the limit", got)
	}
	if p.done(19999) || !p.done(20000) {
		t.Error("done is wrong around the limit")
	}
	if (pacer{rate: 1}).done(1 << 40) {
		t.Error("an unlimited pacer is done")
	}
}

func TestLimitFor(t *testing.T) {
	tests := []struct {
		rate float64
		d    time.Duration
		want uint64
	}{
		{10000, 0, 0},
		{10000, -time.Second, 0},
		{50000, 4 * time.Second, 200000},
		{3, 1100 * time.Millisecond, 4}, // due at 0, 1/3, 2/3 and 1 s
		{1, 100 * time.Millisecond, 1},
		{0.5, 4 * time.Second, 2},
	}
	for _, tt := range tests {
		if got := limitFor(tt.rate, tt.d); got != tt.want {
			t.Errorf("limitFor(%v, %v) = %d, want %d", tt.rate, tt.d, got, tt.want)
		}
	}
}
