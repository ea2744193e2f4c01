package transport

import (
	"strings"
	"testing"
	"time"
)

// TestGapOpen: an open gap (no known end) counts no sequence number,
// and says its end is unknown; a closed one counts From..To.
func TestGapOpen(t *testing.T) {
	s := StreamID{Feed: 1, Session: 7}
	closed := Gap{Stream: s, From: 16, To: 20, Reason: GapNotArchived}
	if closed.Len() != 5 || strings.Contains(closed.String(), "unknown") {
		t.Errorf("closed gap: Len %d, %q", closed.Len(), closed)
	}
	open := Gap{Stream: s, From: 16, To: 16, Reason: GapNotArchived, Open: true}
	if open.Len() != 0 || !open.Lost() {
		t.Errorf("open gap: Len %d, Lost %v: want 0, true", open.Len(), open.Lost())
	}
	if got := open.String(); !strings.Contains(got, "seq 16.. (end unknown, lost)") {
		t.Errorf("open gap reads %q", got)
	}
}

// TestGapStartUnknown: a gap whose start is unknown counts no sequence
// number, is loss, and says its start is unknown.
func TestGapStartUnknown(t *testing.T) {
	g := Gap{Stream: StreamID{Feed: 1, Session: 7}, From: 99, To: 99, Reason: GapStartUnknown}
	if g.Len() != 0 || !g.Lost() {
		t.Errorf("Len %d, Lost %v: want 0, true", g.Len(), g.Lost())
	}
	if got := g.String(); !strings.Contains(got, "seq ..99 (start unknown, lost)") || strings.Contains(got, "GapReason(") {
		t.Errorf("reads %q", got)
	}
}

// TestGapStartUnknownMarker: a gap whose start is unknown, written to a
// log as a gap marker (a pipe from a subscriber that joined at a time),
// reads back as it was: its reason, From equal to To, Len 0.
func TestGapStartUnknownMarker(t *testing.T) {
	g := Gap{Stream: StreamID{Feed: 1, Session: 7}, From: 99, To: 99, Reason: GapStartUnknown}
	back, ok, err := ParseGapMarker(GapMarker(g, time.Unix(5, 0)))
	if err != nil || !ok || back != g || back.Len() != 0 {
		t.Fatalf("read back %+v, %v, %v; want %+v, Len 0", back, ok, err, g)
	}
}
