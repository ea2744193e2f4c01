package transport

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestStreamIDText(t *testing.T) {
	for _, id := range []StreamID{
		{Topic: "orders.eu", Partition: 3},
		{Feed: 7, Session: 0x0123456789abcdef},
		{},
	} {
		got, err := ParseStreamID(FormatStreamID(id))
		if err != nil || got != id {
			t.Errorf("%+v: read back %+v, %v", id, got, err)
		}
	}
	for _, bad := range []string{"", "topic=a", "topic=a partition=-1", "topic= partition=1", "feed=x session=1", "feed=1 session=zz", "feed=1 partition=2", "topic=a partition=1 x"} {
		if _, err := ParseStreamID(bad); !errors.Is(err, ErrBadOrigin) {
			t.Errorf("%q: %v, want ErrBadOrigin", bad, err)
		}
	}
}

func TestOriginHeaders(t *testing.T) {
	o := Origin{Stream: StreamID{Feed: 1, Session: 42}, Seq: 9000, Time: time.Unix(1700000000, 123456789)}
	hs := AppendOrigin([]Header{{Key: "app", Value: []byte("x")}}, o)
	if len(hs) != 2 || hs[1].Key != HeaderOrigin || len(hs[1].Value) != 32 {
		t.Fatalf("headers %q: want app and one %s of 32 bytes", hs, HeaderOrigin)
	}
	got, ok, err := ParseOrigin(hs)
	if err != nil || !ok || got.Stream != o.Stream || got.Seq != o.Seq || !got.Time.Equal(o.Time) || got.Topic != "" {
		t.Fatalf("read back %+v ok=%v err=%v", got, ok, err)
	}
	o.Topic = "AAPL"
	if got, ok, err := ParseOrigin(AppendOrigin(nil, o)); err != nil || !ok || got.Topic != "AAPL" {
		t.Fatalf("with a topic: read back %+v ok=%v err=%v", got, ok, err)
	}
	o.Stream = StreamID{Topic: "orders.eu", Partition: 3}
	if got, ok, err := ParseOrigin(AppendOrigin(nil, o)); err != nil || !ok || got.Stream != o.Stream || got.Topic != o.Topic || got.Seq != o.Seq {
		t.Fatalf("of a log: read back %+v ok=%v err=%v", got, ok, err)
	}
	if _, ok, err := ParseOrigin([]Header{{Key: "app"}}); ok || err != nil {
		t.Errorf("no origin: ok=%v err=%v", ok, err)
	}
	if _, _, err := ParseOrigin([]Header{{Key: HeaderOrigin, Value: hs[1].Value[:20]}}); !errors.Is(err, ErrBadOrigin) {
		t.Errorf("cut short: %v", err)
	}
}

// appendASCIIOrigin writes o's origin as versions before HeaderOrigin
// did (three or four ASCII headers), and asciiGapMarker a gap marker:
// what archives written then hold.
func appendASCIIOrigin(hs []Header, o Origin) []Header {
	hs = append(hs,
		Header{Key: HeaderOriginStream, Value: []byte(FormatStreamID(o.Stream))},
		Header{Key: HeaderOriginSeq, Value: fmt.Appendf(nil, "%d", o.Seq)},
		Header{Key: HeaderOriginTime, Value: fmt.Appendf(nil, "%d", o.Time.UnixNano())},
	)
	if o.Topic != "" {
		hs = append(hs, Header{Key: HeaderOriginTopic, Value: []byte(o.Topic)})
	}
	return hs
}

func asciiGapMarker(g Gap, at time.Time) Message {
	hs := appendASCIIOrigin(nil, Origin{Stream: g.Stream, Seq: g.From, Time: at})
	return Message{Time: at, Headers: append(hs, Header{Key: HeaderGap, Value: fmt.Appendf(nil, "%d-%d %d", g.From, g.To, g.Reason)})}
}

// TestOriginASCIIStillRead: the origin headers and gap markers of
// earlier versions, which archives hold, read as before.
func TestOriginASCIIStillRead(t *testing.T) {
	o := Origin{Stream: StreamID{Feed: 1, Session: 42}, Seq: 9000, Time: time.Unix(1700000000, 123456789), Topic: "AAPL"}
	hs := appendASCIIOrigin([]Header{{Key: "app", Value: []byte("x")}}, o)
	got, ok, err := ParseOrigin(hs)
	if err != nil || !ok || got.Stream != o.Stream || got.Seq != o.Seq || !got.Time.Equal(o.Time) || got.Topic != "AAPL" {
		t.Fatalf("read back %+v ok=%v err=%v", got, ok, err)
	}
	if _, _, err := ParseOrigin(hs[:3]); !errors.Is(err, ErrBadOrigin) {
		t.Errorf("partial origin: %v", err)
	}
	g := Gap{Stream: StreamID{Feed: 3, Session: 5}, From: 100, To: 250, Reason: GapSourceDown}
	if back, ok, err := ParseGapMarker(asciiGapMarker(g, time.Unix(1, 0))); err != nil || !ok || back != g {
		t.Fatalf("gap marker: read back %+v ok=%v err=%v", back, ok, err)
	}
	for _, mark := range []string{"", "5-4 1", "1-2", "1-2 0", "x-2 1", "2-3 1"} {
		bad := Message{Headers: append(appendASCIIOrigin(nil, Origin{Stream: g.Stream, Seq: 1}), Header{Key: HeaderGap, Value: []byte(mark)})}
		if _, _, err := ParseGapMarker(bad); !errors.Is(err, ErrBadOrigin) {
			t.Errorf("marker %q: %v, want ErrBadOrigin", mark, err)
		}
	}
	// A pipe of a pipe: the binary header written last wins over the
	// ASCII ones the source record had.
	newer := Origin{Stream: StreamID{Topic: "arch", Partition: 0}, Seq: 7, Time: time.Unix(2, 0)}
	if got, _, err := ParseOrigin(AppendOrigin(hs, newer)); err != nil || got.Stream != newer.Stream || got.Seq != 7 {
		t.Fatalf("mixed: %+v %v, want the binary header's", got, err)
	}
}

func TestGapMarker(t *testing.T) {
	for _, g := range []Gap{
		{Stream: StreamID{Feed: 3, Session: 5}, From: 100, To: 250, Reason: GapSourceDown},
		{Stream: StreamID{Topic: "src", Partition: 2}, From: 7, To: 7, Reason: GapRetention},
	} {
		m := GapMarker(g, time.Unix(1, 0))
		if len(m.Headers) != 1 || m.Headers[0].Key != HeaderOrigin {
			t.Fatalf("marker headers %q: want one %s", m.Headers, HeaderOrigin)
		}
		got, ok, err := ParseGapMarker(m)
		if err != nil || !ok || got != g {
			t.Fatalf("read back %+v ok=%v err=%v", got, ok, err)
		}
		if o, ok, err := ParseOrigin(m.Headers); err != nil || !ok || o.Stream != g.Stream || o.Seq != g.From {
			t.Fatalf("its origin: %+v ok=%v err=%v", o, ok, err)
		}
	}
	if _, ok, err := ParseGapMarker(Message{Headers: AppendOrigin(nil, Origin{Seq: 1})}); ok || err != nil {
		t.Errorf("a message is not a gap marker: ok=%v err=%v", ok, err)
	}
}

// TestEndMarker: an end marker reads back as the StreamEnd it stands
// for, its origin position is the end's LastSeq, and it is neither a
// gap marker nor read as one; a message or a gap marker is not an end
// marker.
func TestEndMarker(t *testing.T) {
	for _, e := range []StreamEnd{
		{Stream: StreamID{Feed: 3, Session: 5}, LastSeq: 250, Reason: EndClosed},
		{Stream: StreamID{Feed: 1, Session: 9}, LastSeq: 0, Reason: EndClosed},
		{Stream: StreamID{Topic: "src", Partition: 2}, LastSeq: 7, Reason: EndIdle},
	} {
		m := EndMarker(e, time.Unix(1, 0))
		if len(m.Headers) != 1 || m.Headers[0].Key != HeaderOrigin || m.Payload != nil {
			t.Fatalf("marker %+v: want one %s and no payload", m, HeaderOrigin)
		}
		got, ok, err := ParseEndMarker(m)
		if err != nil || !ok || got != e {
			t.Fatalf("read back %+v ok=%v err=%v, want %+v", got, ok, err, e)
		}
		if g, ok, err := ParseGapMarker(m); ok || err != nil {
			t.Fatalf("an end marker read as a gap marker: %+v ok=%v err=%v", g, ok, err)
		}
		if o, ok, err := ParseOrigin(m.Headers); err != nil || !ok || o.Stream != e.Stream || o.Seq != e.LastSeq || !o.Time.Equal(time.Unix(1, 0)) {
			t.Fatalf("its origin: %+v ok=%v err=%v", o, ok, err)
		}
	}
	for name, m := range map[string]Message{
		"message":      {Headers: AppendOrigin(nil, Origin{Seq: 1})},
		"gap marker":   GapMarker(Gap{Stream: StreamID{Feed: 1, Session: 2}, From: 1, To: 2, Reason: GapSourceDown}, time.Unix(1, 0)),
		"no origin":    {Payload: []byte("x")},
		"ASCII origin": {Headers: appendASCIIOrigin(nil, Origin{Stream: StreamID{Feed: 1, Session: 2}, Seq: 3})},
	} {
		if e, ok, err := ParseEndMarker(m); ok || err != nil {
			t.Errorf("%s: read as an end marker: %+v ok=%v err=%v", name, e, ok, err)
		}
	}
}

// TestOriginValueLayout: the value's bytes are the documented layout,
// and what does not follow it is refused.
func TestOriginValueLayout(t *testing.T) {
	o := Origin{Stream: StreamID{Feed: 0x01020304, Session: 0x1112131415161718}, Seq: 0x2122232425262728, Time: time.Unix(0, 0x3132333435363738), Topic: "AB"}
	want := []byte{1, 0, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,
		1, 2, 3, 4, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0, 2, 'A', 'B'}
	if got := AppendOriginValue(nil, o, nil); !bytes.Equal(got, want) {
		t.Fatalf("message of a feed:\n got % x\nwant % x", got, want)
	}
	g := Gap{Stream: StreamID{Topic: "t", Partition: 5}, From: 9, To: 10, Reason: 4}
	want = []byte{1, 3, 0, 0, 0, 0, 0, 0, 0, 9, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,
		0, 0, 0, 5, 0, 1, 't', 0, 0, 0, 0, 0, 0, 0, 10, 4, 0, 0}
	if got := AppendOriginValue(nil, Origin{Time: o.Time}, &g); !bytes.Equal(got, want) {
		t.Fatalf("gap marker of a log:\n got % x\nwant % x", got, want)
	}
	e := StreamEnd{Stream: StreamID{Feed: 0x01020304, Session: 0x1112131415161718}, LastSeq: 9, Reason: EndClosed}
	want = []byte{1, 4, 0, 0, 0, 0, 0, 0, 0, 9, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,
		1, 2, 3, 4, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 1, 0, 0}
	if got := AppendEndValue(nil, e, o.Time); !bytes.Equal(got, want) {
		t.Fatalf("end marker of a feed:\n got % x\nwant % x", got, want)
	}
	// A reader from before end markers knew flags 0x01 and 0x02 only,
	// and refused others: the end marker's flag is not one of them.
	if want[1]&(originFlagLog|originFlagGap) != 0 {
		t.Fatalf("the end marker's flags %#x include one an earlier reader knows", want[1])
	}
	// Both markers' fields, both flags.
	gapAndEnd := AppendOriginValue(nil, Origin{}, &Gap{Stream: o.Stream, From: 1, To: 9, Reason: 1})
	gapAndEnd = append(gapAndEnd[:len(gapAndEnd)-2:len(gapAndEnd)-2], byte(EndClosed), 0, 0)
	gapAndEnd[1] = originFlagGap | originFlagEnd
	endNoReason := AppendEndValue(nil, e, o.Time)
	endNoReason[30] = 0
	good := AppendOriginValue(nil, o, nil)
	for name, bad := range map[string][]byte{
		"end reason 0":   endNoReason,
		"gap and end":    gapAndEnd,
		"end cut short":  AppendEndValue(nil, e, o.Time)[:31],
		"unknown flag 8": append([]byte{1, 8}, good[2:]...),
		"version 2":      append([]byte{2}, good[1:]...),
		"trailing byte":  append(append([]byte{}, good...), 0),
		"cut short":      good[:len(good)-1],
		"no topic":       good[:30],
		"gap 10-9":       AppendOriginValue(nil, Origin{}, &Gap{Stream: o.Stream, From: 10, To: 9, Reason: 1}),
		"gap reason 0":   AppendOriginValue(nil, Origin{}, &Gap{Stream: o.Stream, From: 1, To: 9}),
		"partition -1":   AppendOriginValue(nil, Origin{Stream: StreamID{Topic: "t", Partition: 5}}, nil)[:18:18],
	} {
		if name == "partition -1" {
			bad = append(bad, 0xff, 0xff, 0xff, 0xff, 0, 1, 't', 0, 0)
			bad[1] = 1
		}
		var v OriginValue
		if err := v.Decode(bad); !errors.Is(err, ErrBadOrigin) {
			t.Errorf("%s: %v, want ErrBadOrigin", name, err)
		}
	}
}

// FuzzOriginValue: any bytes either decode to a value that encodes back
// to exactly those bytes, or are refused with ErrBadOrigin; never a
// panic.
func FuzzOriginValue(f *testing.F) {
	f.Add(AppendOriginValue(nil, Origin{Stream: StreamID{Feed: 1, Session: 7}, Seq: 5, Time: time.Unix(0, 9), Topic: "AAPL"}, nil))
	f.Add(AppendOriginValue(nil, Origin{Time: time.Unix(0, 9)}, &Gap{Stream: StreamID{Topic: "src", Partition: 1}, From: 3, To: 9, Reason: 2}))
	f.Add(AppendEndValue(nil, StreamEnd{Stream: StreamID{Feed: 1, Session: 7}, LastSeq: 5, Reason: EndClosed}, time.Unix(0, 9)))
	f.Add(AppendEndValue(nil, StreamEnd{Stream: StreamID{Topic: "src", Partition: 1}, LastSeq: 0, Reason: EndIdle}, time.Unix(0, 9)))
	f.Add([]byte{1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v OriginValue
		if err := v.Decode(b); err != nil {
			if !errors.Is(err, ErrBadOrigin) {
				t.Fatalf("error %v does not wrap ErrBadOrigin", err)
			}
			return
		}
		var g *Gap
		if v.Gap {
			g = &Gap{Stream: v.Stream(), From: v.Seq, To: v.GapTo, Reason: v.GapReason}
		}
		var e *StreamEnd
		if v.End {
			e = &StreamEnd{Stream: v.Stream(), LastSeq: v.Seq, Reason: v.EndReason}
			if v.Gap || v.EndReason == 0 {
				t.Fatalf("% x decodes to an end marker %+v", b, v)
			}
			m := Message{Headers: []Header{{Key: HeaderOrigin, Value: b}}}
			if got, ok, err := ParseEndMarker(m); err != nil || !ok || got != *e {
				t.Fatalf("% x: ParseEndMarker %+v %v %v, want %+v", b, got, ok, err, *e)
			}
			if _, ok, err := ParseGapMarker(m); ok || err != nil {
				t.Fatalf("% x: an end marker read as a gap marker (%v)", b, err)
			}
		}
		if back := appendOriginValue(nil, v.Origin(), g, e); !bytes.Equal(back, b) {
			t.Fatalf("% x decodes to %+v, which encodes to % x", b, v, back)
		}
	})
}

// FuzzOriginHeaders: whatever a record's headers hold, reading them as
// an origin or a gap marker returns an error or a value that formats
// back to what was read, and never panics.
func FuzzOriginHeaders(f *testing.F) {
	f.Add("feed=1 session=2a", "7", "1700000000", "")
	f.Add("topic=t partition=0", "0", "-5", "3-9 1")
	f.Fuzz(func(t *testing.T, stream, seq, ts, gap string) {
		hs := []Header{{Key: HeaderOriginStream, Value: []byte(stream)}, {Key: HeaderOriginSeq, Value: []byte(seq)}, {Key: HeaderOriginTime, Value: []byte(ts)}}
		if gap != "" {
			hs = append(hs, Header{Key: HeaderGap, Value: []byte(gap)})
		}
		if o, ok, err := ParseOrigin(hs); err == nil && ok {
			if back, err := ParseStreamID(FormatStreamID(o.Stream)); err != nil || back != o.Stream {
				t.Fatalf("stream %+v does not read back: %+v %v", o.Stream, back, err)
			}
		}
		if g, ok, err := ParseGapMarker(Message{Headers: hs}); err == nil && ok {
			back, ok2, err2 := ParseGapMarker(GapMarker(g, time.Unix(0, 0)))
			if err2 != nil || !ok2 || back != g {
				t.Fatalf("gap %+v does not read back: %+v %v", g, back, err2)
			}
		}
	})
}

// BenchmarkOriginDecode: decoding the origin of a recorded message
// allocates nothing.
func BenchmarkOriginDecode(b *testing.B) {
	v := AppendOriginValue(nil, Origin{Stream: StreamID{Feed: 1, Session: 7}, Seq: 5, Time: time.Unix(0, 9), Topic: "AAPL"}, nil)
	b.ReportAllocs()
	var o OriginValue
	for b.Loop() {
		if err := o.Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}

func TestOriginDecodeAllocates(t *testing.T) {
	v := AppendOriginValue(nil, Origin{Stream: StreamID{Feed: 1, Session: 7}, Seq: 5, Time: time.Unix(0, 9), Topic: "AAPL"}, nil)
	var o OriginValue
	if n := testing.AllocsPerRun(100, func() { _ = o.Decode(v) }); n != 0 {
		t.Errorf("Decode allocates %v times, want 0", n)
	}
}

// TestOriginValueAliasesNoMore: the byte slices Decode returns end
// where their field ends, their capacity too: a value read from a
// buffer holding more (a Kafka client's header values are slices of
// its fetch) is not overwritten past it by an append to them.
func TestOriginValueAliasesNoMore(t *testing.T) {
	for _, o := range []Origin{
		{Stream: StreamID{Feed: 1, Session: 2}, Seq: 3, Time: time.Unix(0, 4), Topic: "AAPL"},
		{Stream: StreamID{Topic: "prices", Partition: 1}, Seq: 3, Time: time.Unix(0, 4), Topic: "MSFT"},
	} {
		buf := AppendOriginValue(nil, o, nil)
		n := len(buf)
		buf = append(buf, "next record"...)
		var v OriginValue
		if err := v.Decode(buf[:n]); err != nil {
			t.Fatal(err)
		}
		_ = append(v.Topic, 'X')
		_ = append(v.LogTopic, 'X')
		if got := string(buf[n:]); got != "next record" {
			t.Fatalf("%+v: the bytes after the value became %q", o, got)
		}
	}
}
