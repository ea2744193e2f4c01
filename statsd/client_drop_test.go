package statsd

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A server that does not read stops the writes of a unix datagram
// socket; the queue fills and further lines are dropped at once,
// counted, without the caller waiting.
func TestClientDropsWhenQueueFull(t *testing.T) {
	srv := clientUnixgram(t)
	c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), Shards: 1,
		MaxPacketSize: 128, QueueBytes: 2 * 128, FlushInterval: time.Hour, WriteTimeout: time.Minute, CounterKeys: -1})
	calls := 0
	for ; c.Stats().Dropped == 0; calls++ {
		if calls == 1_000_000 {
			t.Fatalf("nothing dropped after %d calls: %+v", calls, c.Stats())
		}
		c.Incr("abcdefghij")
	}
	if st := c.Stats(); st.WriteErrors != 0 {
		t.Fatalf("stats %+v: writes failed, want them blocked", st)
	}
	srv.Close() // the blocked write fails and Close returns at once
	c.Close()
	st := c.Stats()
	if st.Lines+st.Dropped != uint64(calls) {
		t.Fatalf("stats %+v: %d lines written or dropped, %d sent", st, st.Lines+st.Dropped, calls)
	}
}

// When the network refuses packets, their lines are dropped and
// counted, and so is each refused write; the log gets one warning.
func TestClientDropsWhenWriteFails(t *testing.T) {
	srv := clientUnixgram(t)
	var log bytes.Buffer
	c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), Shards: 1,
		MaxPacketSize: 128, FlushInterval: time.Hour, CounterKeys: -1, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	srv.Close()
	const calls = 100
	for range calls {
		c.Incr("abcdefghij")
	}
	c.Close()
	st := c.Stats()
	if st.Lines != 0 || st.Packets != 0 || st.Dropped != calls || st.WriteErrors < 2 {
		t.Fatalf("stats %+v, want all %d lines dropped and write errors", st, calls)
	}
	if n := strings.Count(log.String(), "write failed"); n != 1 {
		t.Fatalf("%d warnings for %d failed writes:\n%s", n, st.WriteErrors, log.String())
	}
}
