package zmq

import (
	"net"
	"slices"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// TestSubscriberFilters: a subscriber delivers only what its own
// subscriptions match, whatever a publisher sends (libzmq's SUB filters
// the same way), and counts what it drops.
func TestSubscriberFilters(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sub := connected(t, "tcp://"+l.Addr().String(), Config{Subscribe: []string{"a."}})
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	zc, err := zmq4.Open(c, null.Security(), zmq4.Pub, nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zc.RecvMsg(); err != nil { // the subscription
		t.Fatal(err)
	}
	for _, m := range [][2]string{{"b.x", "1"}, {"a.x", "2"}, {"b.y", "3"}, {"a.y", "4"}} {
		if err := zc.SendMsg(zmq4.NewMsgFrom([]byte(m[0]), []byte(m[1]))); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(got) < 2 {
		m := nextMessage(t, sub)
		got = append(got, m.Topic+"/"+string(m.Payload))
	}
	if want := []string{"a.x/2", "a.y/4"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if st := sub.Stats(); st.Filtered != 2 {
		t.Errorf("Filtered %d, want 2", st.Filtered)
	}
}

// TestFilteredMessagesAreNoGap: the messages of a stream that arrive
// while the subscriber is not subscribed to it are dropped, not
// reported lost when it subscribes again; a pack whose count its body
// does not hold cannot move the stream while filtered either.
func TestFilteredMessagesAreNoGap(t *testing.T) {
	o := newOffline()
	o.filter = newPrefixFilter([]string{"a.", "z"})
	send := func(topic string, h header, body string) {
		f := [][]byte{[]byte(topic), appendHeader(nil, &h)}
		if h.kind != kindHeartbeat && h.kind != kindEnd {
			f = append(f, []byte(body))
		}
		o.q.put(inItem{frames: f, size: memCost(f), conn: o.conn}, nil)
	}
	hdr := func(k kind, seq uint64) header { return header{kind: k, feed: 1, session: 9, seq: seq} }
	// marker sends a message of another stream, subscribed all along,
	// and receives up to it: what was queued before it is decoded.
	marker := func(seq uint64) {
		t.Helper()
		send("z", header{kind: kindMessage, feed: 2, session: 7, seq: seq}, "z")
		for m := nextMessage(t, o); m.Stream.Feed != 2; m = nextMessage(t, o) {
		}
	}
	send("a.x", hdr(kindMessage, 1), "one")
	send("b.x", header{kind: kindMessage, feed: 1, session: 8, seq: 1}, "other")
	marker(1)
	o.filter.change("a.", false)
	send("a.x", hdr(kindMessage, 2), "two")
	send("a.x", header{kind: kindPacked, feed: 1, session: 9, seq: 3, count: 1 << 40}, "lie")
	send("a.x", hdr(kindHeartbeat, 3), "")
	marker(2)
	o.filter.change("a.", true)
	send("a.x", hdr(kindMessage, 3), "three")
	send("a.x", hdr(kindEnd, 4), "")
	if got, want := o.untilEnd(t), []string{"3 three", "end at 3"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if f, b := o.filtered.Load(), o.badPacks.Load(); f != 3 || b != 1 {
		t.Errorf("Filtered %d, BadPacks %d; want 3, 1", f, b)
	}
}
