package statsd

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A packet is sealed when the next line would not fit: 8 lines of 14
// bytes and their 7 separators make 119 bytes, a ninth would make 134.
func TestClientFlushOnSize(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Shards: 1, MaxPacketSize: 128, FlushInterval: time.Hour, CounterKeys: -1})
	for range 9 {
		c.Incr("abcdefghij")
	}
	want := strings.Repeat("abcdefghij:1|c\n", 8)
	if got := readClientPacket(t, srv); got != want[:len(want)-1] {
		t.Fatalf("first packet %q, want %q", got, want[:len(want)-1])
	}
	c.Close()
	if got := readClientPacket(t, srv); got != "abcdefghij:1|c" {
		t.Fatalf("packet flushed by Close %q", got)
	}
}

func TestClientFlushOnInterval(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), FlushInterval: 10 * time.Millisecond})
	c.Incr("tick")
	if got := readClientPacket(t, srv); got != "tick:1|c" {
		t.Fatalf("got %q", got)
	}
	c.Gauge("tock", 1)
	if got := readClientPacket(t, srv); got != "tock:1|g" {
		t.Fatalf("got %q", got)
	}
	c.Close()
	if st := c.Stats(); st.Packets != 2 || st.Lines != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Lines of every length from several shards: no packet is over the
// limit, no line is split, every line written arrives once (a unix
// datagram socket does not lose), and lines too long for any packet are
// counted as dropped.
func TestClientPacketsNeverExceedLimit(t *testing.T) {
	for _, sequence := range []bool{false, true} {
		t.Run(fmt.Sprintf("sequence=%v", sequence), func(t *testing.T) {
			srv := clientUnixgram(t)
			packets := collectClientPackets(srv)
			const maxSize = 200
			c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), MaxPacketSize: maxSize,
				QueueBytes: 1 << 20, Shards: 4, Sequence: sequence, ClientID: "packets", CounterKeys: -1})
			head := 0
			if sequence {
				head = len(AppendSeqLine(nil, "packets", 1<<64-1)) + 1
			}
			sent, tooLong := map[string]int{}, 0
			for i := range 1000 {
				name := "m" + strings.Repeat("x", i%(maxSize+10))
				line := fmt.Sprintf("%s:%d|c", name, i)
				if head+len(line) > maxSize {
					tooLong++
				} else {
					sent[line]++
				}
				c.Count(name, int64(i), 1)
			}
			c.Close()
			st := c.Stats()
			if st.Dropped != uint64(tooLong) || st.Lines != uint64(len(sent)) || st.WriteErrors != 0 {
				t.Fatalf("stats %+v; want %d lines and %d dropped", st, len(sent), tooLong)
			}
			recv := map[string]int{}
			var seqs []uint64
			for range st.Packets {
				p := receiveClientPacket(t, packets)
				if len(p) > maxSize {
					t.Fatalf("packet of %d bytes, limit %d", len(p), maxSize)
				}
				lines := strings.Split(p, "\n")
				if sequence {
					id, seq, ok := ParseSeqLine([]byte(lines[0]))
					if !ok || string(id) != "packets" {
						t.Fatalf("packet starts with %q, not a sequence line", lines[0])
					}
					seqs = append(seqs, seq)
					lines = lines[1:]
				}
				for _, l := range lines {
					recv[l]++
				}
			}
			for line, n := range sent {
				if recv[line] != n {
					t.Fatalf("line %q received %d times, sent %d", line, recv[line], n)
				}
			}
			if len(recv) != len(sent) {
				t.Fatalf("received %d distinct lines, sent %d", len(recv), len(sent))
			}
			for i, seq := range seqs {
				if seq != uint64(i+1) {
					t.Fatalf("sequence numbers %v, want 1, 2, 3...", seqs)
				}
			}
		})
	}
}

// collectClientPackets reads datagrams from conn until it is closed.
func collectClientPackets(conn net.Conn) <-chan string {
	packets := make(chan string, 1<<16)
	go func() {
		defer close(packets)
		buf := make([]byte, maxClientPacketSize)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			packets <- string(buf[:n])
		}
	}()
	return packets
}

// receiveClientPacket waits at most 5 s for a packet.
func receiveClientPacket(t testing.TB, packets <-chan string) string {
	t.Helper()
	select {
	case p, ok := <-packets:
		if !ok {
			t.Fatal("socket closed")
		}
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no packet within 5 s")
	}
	return ""
}
