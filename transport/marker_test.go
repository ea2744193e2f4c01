package transport

import (
	"testing"
	"time"
)

// agreeMarker checks that ParseMarker reads m as ParseGapMarker and
// ParseEndMarker do, each for its own kind of marker: the same error
// (all three decode the same origin value), the same Gap or StreamEnd.
func agreeMarker(t *testing.T, m Message) {
	t.Helper()
	ev, ok, err := ParseMarker(m)
	g, gok, gerr := ParseGapMarker(m)
	e, eok, _ := ParseEndMarker(m)
	switch {
	case (err != nil) != (gerr != nil):
		t.Fatalf("ParseMarker error %v, ParseGapMarker's %v", err, gerr)
	case err != nil:
	case gok:
		if !ok || ev.Kind != EventGap || ev.Gap != g {
			t.Fatalf("gap marker %v read by ParseMarker as %+v %v", g, ev, ok)
		}
	case eok:
		if !ok || ev.Kind != EventStreamEnd || ev.End != e {
			t.Fatalf("end marker %v read by ParseMarker as %+v %v", e, ev, ok)
		}
	case ok:
		t.Fatalf("not a marker, read by ParseMarker as %+v", ev)
	}
}

// TestParseMarker: gap markers (binary and of earlier versions), end
// markers, plain and malformed records read as the specific parsers
// read them.
func TestParseMarker(t *testing.T) {
	at := time.Unix(1700000000, 0)
	s := StreamID{Feed: 7, Session: 0xabc}
	cut := GapMarker(Gap{Stream: s, From: 1, To: 2}, at)
	cut.Headers[0].Value = cut.Headers[0].Value[:5]
	for _, m := range []Message{
		GapMarker(Gap{Stream: s, From: 10, To: 19, Reason: GapSourceDown}, at),
		asciiGapMarker(Gap{Stream: s, From: 3, To: 4, Reason: GapTimeout}, at),
		EndMarker(StreamEnd{Stream: s, LastSeq: 30, Reason: EndClosed}, at),
		{Headers: []Header{{Key: HeaderOrigin, Value: AppendOriginValue(nil, Origin{Stream: s, Seq: 5, Time: at}, nil)}}, Payload: []byte("x")},
		{Payload: []byte("plain")},
		cut,
	} {
		agreeMarker(t, m)
	}
	if _, ok, _ := ParseMarker(EndMarker(StreamEnd{Stream: s, LastSeq: 1, Reason: EndClosed}, at)); !ok {
		t.Fatal("an end marker is not a marker")
	}
}

// FuzzParseMarker: whatever the origin header holds, ParseMarker agrees
// with ParseGapMarker and ParseEndMarker.
func FuzzParseMarker(f *testing.F) {
	f.Add(AppendOriginValue(nil, Origin{Stream: StreamID{Feed: 1, Session: 2}, Seq: 3}, nil))
	f.Add(GapMarker(Gap{Stream: StreamID{Feed: 1, Session: 2}, From: 3, To: 9, Reason: GapTimeout}, time.Unix(0, 0)).Headers[0].Value)
	f.Add(EndMarker(StreamEnd{Stream: StreamID{Feed: 1, Session: 2}, LastSeq: 9, Reason: EndClosed}, time.Unix(0, 0)).Headers[0].Value)
	f.Fuzz(func(t *testing.T, v []byte) {
		agreeMarker(t, Message{Headers: []Header{{Key: HeaderOrigin, Value: v}}})
	})
}
