package archive

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestUnwrap: a recorded message comes back as it was published, its
// origin headers gone; a gap marker as its Gap; records of another feed,
// without origin, or malformed, are skipped and counted.
func TestUnwrap(t *testing.T) {
	log := newFakeLog(100)
	a := sess(1, 7)
	log.add(part0, recorded(a, 5, "five"))
	log.add(part0, marker(a, 6, 9, transport.GapSourceDown))
	log.add(part0, recorded(sess(2, 7), 1, "other feed"))
	log.add(part0, transport.Message{Payload: []byte("no origin")})
	bad := recorded(a, 10, "bad")
	bad.Headers[1].Value = bad.Headers[1].Value[:20] // the origin header, cut short
	log.add(part0, bad)
	log.add(part0, recorded(a, 11, "eleven"))
	r, evs := nextFromEarliest(t, log)
	if len(evs) != 3 {
		t.Fatalf("%d events, want a message, a gap and a message: %+v", len(evs), evs)
	}
	m := evs[0].Message
	if evs[0].Kind != transport.EventMessage || m.Stream != a || m.Seq != 5 || string(m.Payload) != "five" || m.Topic != "AAPL" ||
		string(m.Key) != "k" || !m.Time.Equal(time.Unix(0, 5)) || len(m.Headers) != 1 || m.Headers[0].Key != "app" {
		t.Errorf("message %+v", m)
	}
	if g := evs[1].Gap; evs[1].Kind != transport.EventGap || g != (transport.Gap{Stream: a, From: 6, To: 9, Reason: transport.GapSourceDown}) {
		t.Errorf("gap %+v", evs[1])
	}
	if evs[2].Message.Seq != 11 {
		t.Errorf("third event %+v, want message 11", evs[2])
	}
	log.add(part0, recorded(a, 12, "twelve"))
	if evs, err := r.Next(context.Background()); err != nil || len(evs) != 1 || evs[0].Message.Seq != 12 {
		t.Fatalf("reading on: %+v, %v: want message 12 alone", evs, err)
	}
	want := Stats{Records: 7, Messages: 3, Gaps: 1, OtherStreams: 1, NoOrigin: 1, Malformed: 1, Seeks: 1}
	if s := r.Stats(); s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
}

// feedLayout fills a log with two sessions of feed 1 (messages that
// take one or three sequence numbers, gap markers) and records of feed 2
// and without origin between them, and returns the feed's records as
// (position, log position) pairs.
func feedLayout(log *fakeLog) (pos []Pos, at []uint64) {
	add := func(m transport.Message, p Pos, mine bool) {
		if mine {
			pos, at = append(pos, p), append(at, uint64(len(log.streams[part0])))
		}
		log.add(part0, m)
	}
	for _, s := range []uint64{100, 200} {
		id := sess(1, s)
		for seq := uint64(1); seq <= 400; {
			switch {
			case seq%97 == 0:
				add(marker(id, seq, seq+20, transport.GapOverflow), Pos{s, seq + 20}, true)
				seq += 21
			case seq%13 == 0:
				add(recorded(id, seq, payload(id, seq)), Pos{s, seq}, true) // a message over three datagrams
				seq += 3
			default:
				add(recorded(id, seq, payload(id, seq)), Pos{s, seq}, true)
				seq++
			}
			if seq%11 == 0 {
				add(recorded(sess(2, s), seq, "feed 2"), Pos{}, false)
			}
			if seq%29 == 0 {
				add(transport.Message{Payload: []byte("plain")}, Pos{}, false)
			}
		}
	}
	return pos, at
}

// TestSeekFinds: for every position of both sessions (and around them),
// reading after Seek(At(p)) starts with the feed's first record at or
// after p, whatever the size of a read.
func TestSeekFinds(t *testing.T) {
	for _, batch := range []int{1, 7, 1000} {
		log := newFakeLog(batch)
		pos, at := feedLayout(log)
		r := NewReader(log, 1)
		ctx := context.Background()
		probes := 0
		for _, s := range []uint64{50, 100, 200, 300} {
			for seq := uint64(0); seq <= 402; seq++ {
				target := Pos{s, seq}
				want := len(pos) // the index of the first record at or after target
				for i, p := range pos {
					if !p.Less(target) {
						want = i
						break
					}
				}
				before := r.Stats().Probes
				if err := r.Seek(ctx, At(target)); err != nil {
					t.Fatal(err)
				}
				probes = max(probes, int(r.Stats().Probes-before))
				if want == len(pos) {
					if r.pos != uint64(len(log.streams[part0])) {
						t.Fatalf("batch %d, target %v after the last record: position %d, want the end", batch, target, r.pos)
					}
					continue
				}
				lo := uint64(0)
				if want > 0 {
					lo = at[want-1] + 1
				}
				if r.pos < lo || r.pos > at[want] {
					t.Fatalf("batch %d, target %v: position %d, want %d..%d (the record of %v at %d)", batch, target, r.pos, lo, at[want], pos[want], at[want])
				}
			}
		}
		t.Logf("batch %d: at most %d reads per seek", batch, probes)
	}
}

// TestSeekGuess: in a session without markers or fragments, a position
// is found with two reads: the last record and the one it points to.
func TestSeekGuess(t *testing.T) {
	log := newFakeLog(500)
	id := sess(1, 100)
	for seq := uint64(1); seq <= 100_000; seq++ {
		log.add(part0, recorded(id, seq, "x"))
	}
	r := NewReader(log, 1)
	ctx := context.Background()
	for _, seq := range []uint64{1, 2, 5000, 77777, 99999, 100_000} {
		before := r.Stats().Probes
		if err := r.Seek(ctx, At(Pos{100, seq})); err != nil {
			t.Fatal(err)
		}
		if r.pos != seq-1 {
			t.Fatalf("seq %d at position %d, want %d", seq, r.pos, seq-1)
		}
		if n := r.Stats().Probes - before; n > 2 {
			t.Errorf("seq %d found with %d reads, want 2", seq, n)
		}
	}
}

// TestSeekGuessEarlierSession: when the log's last records are of a
// later session (a publisher restarted), a position of the earlier one
// is found from the last record of that session the reader read: after
// the first search, every seek near where the reader was takes two
// reads (the log's last record, then the guess), and lands exactly.
func TestSeekGuessEarlierSession(t *testing.T) {
	log := newFakeLog(500)
	a, b := sess(1, 100), sess(1, 200)
	for seq := uint64(1); seq <= 100_000; seq++ {
		log.add(part0, recorded(a, seq, "x"))
	}
	for seq := uint64(1); seq <= 50_000; seq++ {
		log.add(part0, recorded(b, seq, "x"))
	}
	r := NewReader(log, 1)
	ctx := context.Background()
	if err := r.Seek(ctx, At(Pos{100, 60_000})); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{60_400, 61_000, 59_000, 99_999, 100_000, 1} {
		if _, err := r.Next(ctx); err != nil {
			t.Fatal(err)
		}
		before := r.Stats().Probes
		if err := r.Seek(ctx, At(Pos{100, seq})); err != nil {
			t.Fatal(err)
		}
		if r.pos != seq-1 {
			t.Fatalf("seq %d at position %d, want %d", seq, r.pos, seq-1)
		}
		if n := r.Stats().Probes - before; n > 2 {
			t.Errorf("seq %d found with %d reads, want 2", seq, n)
		}
	}
}

// TestSeekEarliestTimeTrimmed: earliest is the log start; a time, the
// first record stamped at or after it; a position before what the log
// still holds lands on the log start and says so (Trimmed), as does a
// time before it (the records deleted may have been stamped after it).
func TestSeekEarliestTimeTrimmed(t *testing.T) {
	log := newFakeLog(10)
	id := sess(1, 100)
	for seq := uint64(1); seq <= 50; seq++ {
		log.add(part0, recorded(id, seq, "x"))
	}
	log.first[part0] = 20
	r := NewReader(log, 1)
	ctx := context.Background()
	for _, c := range []struct {
		start   Start
		pos     uint64
		trimmed bool
	}{
		{Earliest(), 20, false},
		{AtTime(time.Unix(0, 30)), 29, false},
		{AtTime(time.Unix(0, 5)), 20, true},
		{At(Pos{100, 5}), 20, true},
		{At(Pos{100, 30}), 29, false},
		{At(Pos{100, 99}), 50, false},
	} {
		if err := r.Seek(ctx, c.start); err != nil {
			t.Fatal(err)
		}
		if r.Position() != c.pos || r.Trimmed() != c.trimmed {
			t.Errorf("%v: position %d, trimmed %v; want %d, %v", c.start, r.Position(), r.Trimmed(), c.pos, c.trimmed)
		}
	}
	p, ok, err := r.Last(ctx)
	if err != nil || !ok || p != (Pos{100, 50}) {
		t.Errorf("last %v %v %v, want 100:50", p, ok, err)
	}
}

// TestChooseStream: of several streams, the one whose last records are
// the feed's; none holding it is an error naming the fix; no stream at
// all is ErrEmpty.
func TestChooseStream(t *testing.T) {
	log := newFakeLog(10)
	part1 := transport.StreamID{Topic: "t", Partition: 1}
	for seq := uint64(1); seq <= 10; seq++ {
		log.add(part0, recorded(sess(2, 5), seq, "feed 2"))
		log.add(part1, recorded(sess(1, 5), seq, "feed 1"))
	}
	ctx := context.Background()
	r := NewReader(log, 1)
	if err := r.Seek(ctx, Earliest()); err != nil || r.Stream() != part1 {
		t.Fatalf("seek: %v, stream %v: want partition 1", err, r.Stream())
	}
	if err := NewReader(log, 3).Seek(ctx, Earliest()); !errors.Is(err, ErrNoStream) {
		t.Fatalf("feed 3: %v, want ErrNoStream", err)
	}
	if err := NewReader(newFakeLog(1), 1).Seek(ctx, Earliest()); !errors.Is(err, ErrEmpty) {
		t.Fatalf("no streams: %v, want ErrEmpty", err)
	}
}

// TestUnwrapASCII: an archive written before the binary origin header
// (each record's origin in ASCII headers), to which an upgraded
// recorder appended, reads as one feed: the old records as they read
// then, and a seek finds positions on both sides of the change.
func TestUnwrapASCII(t *testing.T) {
	log := newFakeLog(100)
	a, b := sess(1, 7), sess(1, 9)
	log.add(part0, asciiRecorded(a, 1, "one"))
	log.add(part0, asciiMarker(a, 2, 4, transport.GapSourceDown))
	log.add(part0, asciiRecorded(sess(2, 7), 1, "other feed"))
	bad := asciiRecorded(a, 5, "bad")
	bad.Headers[2].Value = []byte("x") // the origin seq
	log.add(part0, bad)
	log.add(part0, asciiRecorded(a, 6, "six"))
	log.add(part0, recorded(a, 7, "seven"))
	log.add(part0, marker(a, 8, 8, transport.GapOverflow))
	log.add(part0, recorded(b, 1, "b1"))
	r, evs := nextFromEarliest(t, log)
	ctx := context.Background()
	var got []string
	for _, ev := range evs {
		switch m := ev.Message; ev.Kind {
		case transport.EventMessage:
			if m.Topic != "AAPL" || string(m.Key) != "k" || !m.Time.Equal(time.Unix(0, int64(m.Seq))) || len(m.Headers) != 1 || m.Headers[0].Key != "app" {
				t.Errorf("message %+v", m)
			}
			got = append(got, fmt.Sprintf("%d/%d:%s", m.Stream.Session, m.Seq, m.Payload))
		case transport.EventGap:
			got = append(got, fmt.Sprintf("gap %d/%d-%d:%d", ev.Gap.Stream.Session, ev.Gap.From, ev.Gap.To, ev.Gap.Reason))
		}
	}
	want := []string{"7/1:one", fmt.Sprintf("gap 7/2-4:%d", transport.GapSourceDown), "7/6:six", "7/7:seven", fmt.Sprintf("gap 7/8-8:%d", transport.GapOverflow), "9/1:b1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %q\nwant %q", got, want)
	}
	if s := r.Stats(); s.Messages != 4 || s.Gaps != 2 || s.OtherStreams != 1 || s.Malformed != 1 {
		t.Errorf("stats %+v", s)
	}
	for _, c := range []struct {
		at   Pos
		want string // the first event read from there
	}{{Pos{7, 3}, want[1]}, {Pos{7, 5}, want[2]}, {Pos{7, 6}, want[2]}, {Pos{7, 7}, want[3]}, {Pos{7, 8}, want[4]}, {Pos{9, 1}, want[5]}} {
		if err := r.Seek(ctx, At(c.at)); err != nil {
			t.Fatal(err)
		}
		evs, err := r.Next(ctx)
		if err != nil || len(evs) == 0 {
			t.Fatalf("seek %v: %d events, %v", c.at, len(evs), err)
		}
		first := fmt.Sprintf("%d/%d:%s", evs[0].Message.Stream.Session, evs[0].Message.Seq, evs[0].Message.Payload)
		if g := evs[0].Gap; evs[0].Kind == transport.EventGap {
			first = fmt.Sprintf("gap %d/%d-%d:%d", g.Stream.Session, g.From, g.To, g.Reason)
		}
		if first != c.want {
			t.Errorf("seek %v: read %q first, want %q", c.at, first, c.want)
		}
	}
}

// FuzzUnwrap: any headers, values and payload are either a record of
// the feed, consistent with what transport's parsers say, or skipped;
// never a panic. bin, when not empty, is a HeaderOrigin value, which
// takes precedence over the ASCII headers.
func FuzzUnwrap(f *testing.F) {
	f.Add("feed=1 session=7", "5", "9", "", "", []byte(nil), []byte("p"))
	f.Add("feed=1 session=7", "5", "9", "", "5-9 4", []byte(nil), []byte(nil))
	f.Add("topic=x partition=0", "5", "9", "T", "", []byte(nil), []byte("p"))
	f.Add("feed=1 session=zz", "-1", "x", "", "9-5 0", []byte(nil), []byte("p"))
	f.Add("", "", "", "", "", transport.AppendOriginValue(nil, transport.Origin{Stream: sess(1, 7), Seq: 5, Topic: "AAPL"}, nil), []byte("p"))
	f.Add("", "", "", "", "", transport.AppendOriginValue(nil, transport.Origin{}, &transport.Gap{Stream: sess(1, 7), From: 5, To: 9, Reason: 4}), []byte(nil))
	f.Add("feed=1 session=7", "5", "9", "", "", transport.AppendOriginValue(nil, transport.Origin{Stream: sess(2, 7), Seq: 5}, nil), []byte("p"))
	f.Add("", "", "", "", "", transport.AppendEndValue(nil, transport.StreamEnd{Stream: sess(1, 7), LastSeq: 5, Reason: transport.EndClosed}, time.Unix(0, 9)), []byte(nil))
	f.Fuzz(func(t *testing.T, stream, seq, ts, topic, gap string, bin, payload []byte) {
		hs := []transport.Header{{Key: "app", Value: []byte("v")}}
		for _, h := range []transport.Header{
			{Key: transport.HeaderOriginStream, Value: []byte(stream)}, {Key: transport.HeaderOriginSeq, Value: []byte(seq)},
			{Key: transport.HeaderOriginTime, Value: []byte(ts)}, {Key: transport.HeaderOriginTopic, Value: []byte(topic)},
			{Key: transport.HeaderGap, Value: []byte(gap)}, {Key: transport.HeaderOrigin, Value: bin},
		} {
			if len(h.Value) > 0 {
				hs = append(hs, h)
			}
		}
		m := transport.Message{Headers: hs, Payload: payload}
		o, originOK, originErr := transport.ParseOrigin(hs)
		g, markerOK, _ := transport.ParseGapMarker(m)
		e, endOK, _ := transport.ParseEndMarker(m)
		var ev transport.Event
		p, kind := newUnwrapper(1).unwrap(&m, &ev)
		if kind != recFeed {
			if kind == recOtherFeed && originOK && o.Stream.Feed == 1 && o.Stream.Topic == "" {
				t.Fatalf("origin %+v of feed 1 skipped as another feed's", o)
			}
			return
		}
		if ev.Kind == transport.EventGap {
			if !markerOK || ev.Gap != g || ev.Gap.Stream.Feed != 1 || p.Seq != ev.Gap.To {
				t.Fatalf("gap %+v from a record transport reads as %+v (%v)", ev.Gap, g, markerOK)
			}
			return
		}
		if ev.Kind == transport.EventStreamEnd {
			if !endOK || ev.End != e || ev.End.Stream.Feed != 1 || p.Seq != ev.End.LastSeq || p.Session != e.Stream.Session {
				t.Fatalf("end %+v from a record transport reads as %+v (%v)", ev.End, e, endOK)
			}
			return
		}
		if !originOK || originErr != nil || ev.Message.Stream != o.Stream || ev.Message.Seq != o.Seq || ev.Message.Topic != o.Topic || !ev.Message.Time.Equal(o.Time) || p.Seq != ev.Message.Seq {
			t.Fatalf("message %+v from headers transport.ParseOrigin reads as %+v (%v)", ev.Message, o, originErr)
		}
		if markerOK || endOK {
			t.Fatalf("message %+v from a gap or end marker", ev.Message)
		}
		for _, h := range ev.Message.Headers {
			if h.Key != "app" {
				t.Fatalf("header %q kept", h.Key)
			}
		}
	})
}

// boundsFails is a log whose Bounds fails when fail is set.
type boundsFails struct {
	*fakeLog
	fail bool
}

func (l *boundsFails) Bounds(ctx context.Context, s transport.StreamID) (uint64, uint64, error) {
	if l.fail {
		return 0, 0, errors.New("connection reset")
	}
	return l.fakeLog.Bounds(ctx, s)
}

// TestNextNotPositioned: Next before a Seek, or after one that failed,
// is ErrNotPositioned, not a read from the log's position 0; even after
// Last found the stream.
func TestNextNotPositioned(t *testing.T) {
	log := &boundsFails{fakeLog: newFakeLog(10)}
	for seq := uint64(1); seq <= 5; seq++ {
		log.add(part0, recorded(sess(1, 100), seq, "x"))
	}
	r := NewReader(log, 1)
	ctx := context.Background()
	if _, ok, err := r.Last(ctx); !ok || err != nil {
		t.Fatalf("last: %v %v", ok, err)
	}
	if _, err := r.Next(ctx); !errors.Is(err, ErrNotPositioned) {
		t.Fatalf("Next before Seek: %v, want ErrNotPositioned", err)
	}
	if err := r.Seek(ctx, Earliest()); err != nil {
		t.Fatal(err)
	}
	if evs, err := r.Next(ctx); err != nil || len(evs) != 5 {
		t.Fatalf("Next after Seek: %d events, %v", len(evs), err)
	}
	log.fail = true
	if err := r.Seek(ctx, At(Pos{100, 3})); err == nil {
		t.Fatal("Seek did not fail")
	}
	if _, err := r.Next(ctx); !errors.Is(err, ErrNotPositioned) {
		t.Fatalf("Next after a failed Seek: %v, want ErrNotPositioned", err)
	}
}

// eachLog is a fakeLog that also hands its records one at a time, as
// package kafka's Log does: one message and one headers slice, reused
// (and scribbled over after each record, so that a reader keeping them
// shows).
type eachLog struct {
	*fakeLog
	eachCalls int
}

func (l *eachLog) ReadEach(ctx context.Context, s transport.StreamID, pos uint64, fn func(*transport.Message)) (int, error) {
	l.eachCalls++
	ms, err := l.fakeLog.Read(ctx, s, pos)
	if err != nil {
		return 0, err
	}
	var m transport.Message
	hs := make([]transport.Header, 0, 8)
	for i := range ms {
		m = ms[i]
		hs = append(hs[:0], ms[i].Headers...)
		m.Headers = hs
		fn(&m)
		for j := range hs[:cap(hs)] {
			hs[:cap(hs)][j] = transport.Header{Key: "scribbled"}
		}
		m = transport.Message{}
	}
	return len(ms), nil
}

// TestReadEach: a log that hands its records one at a time, reusing
// them, reads as one that returns them: the events keep their own
// headers.
func TestReadEach(t *testing.T) {
	log := &eachLog{fakeLog: newFakeLog(100)}
	a := sess(1, 7)
	for seq := uint64(1); seq <= 5; seq++ {
		log.add(part0, recorded(a, seq, payload(a, seq)))
	}
	log.add(part0, marker(a, 6, 9, transport.GapSourceDown))
	log.add(part0, asciiRecorded(a, 10, payload(a, 10)))
	bare := recorded(a, 11, payload(a, 11))
	bare.Headers = bare.Headers[1:] // the origin header alone
	log.add(part0, bare)
	r := NewReader(log, 1)
	ctx := context.Background()
	if err := r.Seek(ctx, Earliest()); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Append(ctx, make([]transport.Event, 0, 2))
	if err != nil || log.eachCalls == 0 {
		t.Fatalf("%v, %d calls of ReadEach", err, log.eachCalls)
	}
	if len(evs) != 8 {
		t.Fatalf("%d events, want 8", len(evs))
	}
	for i, ev := range evs {
		switch {
		case i == 5:
			if ev.Kind != transport.EventGap || ev.Gap != (transport.Gap{Stream: a, From: 6, To: 9, Reason: transport.GapSourceDown}) {
				t.Errorf("event %d: %+v, want the gap", i, ev)
			}
		case i == 7:
			if ev.Message.Seq != 11 || ev.Message.Headers != nil {
				t.Errorf("event %d: %+v, want message 11 without headers", i, ev.Message)
			}
		default:
			m := ev.Message
			seq := uint64(i + 1)
			if i == 6 {
				seq = 10
			}
			if m.Seq != seq || string(m.Payload) != payload(a, seq) || len(m.Headers) != 1 || m.Headers[0].Key != "app" || string(m.Headers[0].Value) != "h" {
				t.Errorf("event %d: %+v, want message %d with its app header", i, m, seq)
			}
		}
	}
}

// TestReadDeleted: a read that the log starts past where the reader
// was, because its retention deleted the records between, says so
// (Deleted), for that read only.
func TestReadDeleted(t *testing.T) {
	log := newFakeLog(10)
	a := sess(1, 7)
	for seq := uint64(1); seq <= 100; seq++ {
		log.add(part0, recorded(a, seq, payload(a, seq)))
	}
	r := NewReader(log, 1)
	ctx := context.Background()
	if err := r.Seek(ctx, Earliest()); err != nil {
		t.Fatal(err)
	}
	next := func(first uint64, deleted bool) {
		t.Helper()
		evs, err := r.Next(ctx)
		if err != nil || len(evs) == 0 || evs[0].Message.Seq != first || r.Deleted() != deleted {
			t.Fatalf("read: %+v, deleted %v, %v; want from %d, deleted %v", evs, r.Deleted(), err, first, deleted)
		}
	}
	next(1, false)
	log.first[part0] = 50 // retention: the records of 51.. are left
	next(51, true)
	next(61, false)
}

// nextFromEarliest makes a Reader of log's feed 1, seeks it to the
// earliest record and returns it with the events of its first read.
func nextFromEarliest(t *testing.T, log transport.Log) (*Reader, []transport.Event) {
	t.Helper()
	r := NewReader(log, 1)
	ctx := context.Background()
	if err := r.Seek(ctx, Earliest()); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r, evs
}
