package statsd

import (
	"bytes"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// rawReceiver is BenchmarkIngest's measuring stick: one UDP socket with
// the same receive buffer as our server's, read the way our server
// reads it (batches of DefaultReadBatch datagrams by recvmmsg, on a
// thread of its own that waits in poll), that only counts the lines of
// each datagram: no parsing, no aggregation, no hand-off to another
// goroutine. What it loses at a rate, no server that aggregates on this
// machine with that buffer could keep; its zero-loss rate is the
// ceiling that "same receive buffer" puts on every side.
type rawReceiver struct {
	conn   *net.UDPConn
	port   int
	rcvbuf int // SO_RCVBUF as getsockopt reports it (twice the usable size)
	lines  atomic.Uint64
	done   chan struct{}
}

// startRaw opens the stick on a free loopback port, with SO_RCVBUF set
// to rcvbuf bytes when rcvbuf > 0 (else the kernel's default), and
// closes it when b ends.
func startRaw(b *testing.B, rcvbuf int) *rawReceiver {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	if rcvbuf > 0 {
		if err := c.SetReadBuffer(rcvbuf); err != nil {
			b.Fatal(err)
		}
	}
	r := &rawReceiver{conn: c, port: c.LocalAddr().(*net.UDPAddr).Port, rcvbuf: 2 * recvBuffer(c), done: make(chan struct{})}
	ms := make([]ipv4.Message, DefaultReadBatch)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, DefaultMaxDatagram)}
	}
	started := make(chan error, 1)
	go func() {
		defer close(r.done)
		read, release, err := newBatchReader(c, ms) // locks this goroutine to its thread
		started <- err
		if err != nil {
			return
		}
		defer release()
		for {
			k, err := read()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var n uint64
			for i := range k {
				n += uint64(bytes.Count(ms[i].Buffers[0][:ms[i].N], []byte{'\n'})) + 1
			}
			r.lines.Add(n)
		}
	}()
	b.Cleanup(func() {
		c.Close()
		<-r.done
	})
	if err := <-started; err != nil {
		b.Fatal(err)
	}
	return r
}

// rawCounter counts the lines the stick read during a trial.
type rawCounter struct {
	r    *rawReceiver
	base uint64
}

func (c *rawCounter) start(*testing.B) { c.base = c.r.lines.Load() }

// counted waits until the count has not moved for two looks 20 ms
// apart: the reading goroutine empties the socket's buffer after the
// sender is done.
func (c *rawCounter) counted(*testing.B) uint64 {
	return untilStill(c.r.lines.Load, 2, 20*time.Millisecond) - c.base
}
