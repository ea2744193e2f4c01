package transport

import (
	"errors"
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
	got, ok, err := ParseOrigin(hs)
	if err != nil || !ok || got.Stream != o.Stream || got.Seq != o.Seq || !got.Time.Equal(o.Time) || got.Topic != "" {
		t.Fatalf("read back %+v ok=%v err=%v", got, ok, err)
	}
	o.Topic = "AAPL"
	if got, ok, err := ParseOrigin(AppendOrigin(nil, o)); err != nil || !ok || got.Topic != "AAPL" {
		t.Fatalf("with a topic: read back %+v ok=%v err=%v", got, ok, err)
	}
	if _, ok, err := ParseOrigin([]Header{{Key: "app"}}); ok || err != nil {
		t.Errorf("no origin: ok=%v err=%v", ok, err)
	}
	if _, _, err := ParseOrigin(hs[:2]); !errors.Is(err, ErrBadOrigin) {
		t.Errorf("partial origin: %v", err)
	}
}

func TestGapMarker(t *testing.T) {
	g := Gap{Stream: StreamID{Feed: 3, Session: 5}, From: 100, To: 250, Reason: GapSourceDown}
	m := GapMarker(g, time.Unix(1, 0))
	got, ok, err := ParseGapMarker(m)
	if err != nil || !ok || got != g {
		t.Fatalf("read back %+v ok=%v err=%v", got, ok, err)
	}
	if _, ok, err := ParseGapMarker(Message{Headers: AppendOrigin(nil, Origin{Seq: 1})}); ok || err != nil {
		t.Errorf("a message is not a gap marker: ok=%v err=%v", ok, err)
	}
	for _, mark := range []string{"", "5-4 1", "1-2", "1-2 0", "x-2 1", "2-3 1"} {
		bad := Message{Headers: append(AppendOrigin(nil, Origin{Stream: g.Stream, Seq: 1}), Header{Key: HeaderGap, Value: []byte(mark)})}
		if _, _, err := ParseGapMarker(bad); !errors.Is(err, ErrBadOrigin) {
			t.Errorf("marker %q: %v, want ErrBadOrigin", mark, err)
		}
	}
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
