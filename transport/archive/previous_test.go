package archive

import (
	"context"
	"testing"
	"time"
)

// TestPrevious: after a Seek to a time, Previous gives the feed's last
// record before where it landed, skipping other feeds' records: a
// message of the same session, an end marker of an earlier session,
// nothing at the log's start; and before a Seek, ErrNotPositioned.
func TestPrevious(t *testing.T) {
	log := newFakeLog(3)
	a, b, other := sess(1, 100), sess(1, 200), sess(2, 7)
	for seq := uint64(1); seq <= 10; seq++ {
		log.add(part0, recorded(a, seq, "a"))
		log.add(part0, recorded(other, seq, "other"))
	}
	log.add(part0, endMarker(a, 10))
	for seq := uint64(1); seq <= 5; seq++ {
		m := recorded(b, seq, "b")
		m.Time = time.Unix(0, int64(100+seq))
		log.add(part0, m)
		log.add(part0, recorded(other, 10+seq, "other"))
	}
	r := NewReader(log, 1)
	ctx := context.Background()
	if _, _, _, err := r.Previous(ctx); err != ErrNotPositioned {
		t.Fatalf("before a Seek: %v, want ErrNotPositioned", err)
	}
	for _, c := range []struct {
		at      int64
		p       Pos
		end, ok bool
	}{
		{0, Pos{}, false, false},
		{5, Pos{100, 4}, false, true},
		{101, Pos{100, 10}, true, true},
		{103, Pos{200, 2}, false, true},
		{1000, Pos{200, 5}, false, true},
	} {
		if err := r.Seek(ctx, AtTime(time.Unix(0, c.at))); err != nil {
			t.Fatal(err)
		}
		p, end, ok, err := r.Previous(ctx)
		if err != nil || p != c.p || end != c.end || ok != c.ok {
			t.Errorf("time %d: previous %v end %v ok %v err %v; want %v %v %v", c.at, p, end, ok, err, c.p, c.end, c.ok)
		}
	}
}

// TestPreviousFarBack: the feed's last record before where a Seek to a
// time landed is found however many records of other feeds come
// between (a busy log): more than one span of them. (Only the span's
// last 1024 were read: the session's record before was not found, and
// a join by time reported a Gap for messages published before its
// time.) At the log's start, with none of the feed before, there is
// none.
func TestPreviousFarBack(t *testing.T) {
	log := newFakeLog(100)
	a, other := sess(1, 100), sess(2, 7)
	for seq := uint64(1); seq <= 5; seq++ {
		log.add(part0, recorded(a, seq, "a"))
	}
	for seq := uint64(1); seq <= 3*previousSpan; seq++ {
		m := recorded(other, seq, "other")
		m.Time = time.Unix(0, 50)
		log.add(part0, m)
	}
	for seq := uint64(6); seq <= 10; seq++ {
		m := recorded(a, seq, "a")
		m.Time = time.Unix(0, int64(100+seq))
		log.add(part0, m)
	}
	r := NewReader(log, 1)
	ctx := context.Background()
	for _, c := range []struct {
		at int64
		p  Pos
		ok bool
	}{
		{106, Pos{100, 5}, true},
		{108, Pos{100, 7}, true},
		{50, Pos{100, 5}, true},
	} {
		if err := r.Seek(ctx, AtTime(time.Unix(0, c.at))); err != nil {
			t.Fatal(err)
		}
		p, _, ok, err := r.Previous(ctx)
		if err != nil || p != c.p || ok != c.ok {
			t.Errorf("time %d: previous %v ok %v err %v; want %v %v", c.at, p, ok, err, c.p, c.ok)
		}
	}
	r = NewReader(log, 2)
	if err := r.Seek(ctx, AtTime(time.Unix(0, 50))); err != nil {
		t.Fatal(err)
	}
	if p, _, ok, err := r.Previous(ctx); err != nil || ok {
		t.Errorf("feed 2 at its start: previous %v ok %v err %v; want none", p, ok, err)
	}
}
