package multicast

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

// readBatch reads up to a batch of datagrams per system call
// (recvmmsg), into buffers it reuses. With GRO, an entry may hold a run
// of datagrams the kernel merged (see offload_linux.go). It keeps its
// place in the last read, so that its datagrams can be handled over
// several turns (handle).
type readBatch struct {
	sys  *sysBatch // readbatch_linux.go, readbatch_other.go
	msgs []ipv4.Message
	gro  bool
	n    int // entries the last read filled
	next int // the entry to handle next
	off  int // bytes of entry next handled already (a GRO run)
}

// newReadBatch reads n entries a call into buffers of size bytes; gro
// says the socket has UDP_GRO on, and makes room for merged runs and
// their control message.
func newReadBatch(c *net.UDPConn, n, size int, gro bool) (*readBatch, error) {
	rb := &readBatch{msgs: make([]ipv4.Message, n), gro: gro}
	if gro {
		size = max(size, groBuffer)
	}
	for i := range rb.msgs {
		rb.msgs[i].Buffers = [][]byte{make([]byte, size)}
		if gro {
			rb.msgs[i].OOB = make([]byte, groOOB)
		}
	}
	sys, err := newSysBatch(c, rb.msgs)
	if err != nil {
		return nil, err
	}
	rb.sys = sys
	return rb, nil
}

// read waits for at least one datagram and returns how many entries it
// got. What the last read brought must have been handled first.
func (rb *readBatch) read() (int, error) {
	n, err := rb.sys.read()
	rb.n, rb.next, rb.off = n, 0, 0
	return n, err
}

// readNow is read without waiting, looking at the socket even past its
// read deadline: 0 entries when it is empty (or where the system cannot
// read without waiting).
func (rb *readBatch) readNow() (int, error) {
	n, err := rb.sys.readNow()
	rb.n, rb.next, rb.off = n, 0, 0
	return n, err
}

// datagram returns entry i of the last read and its source.
func (rb *readBatch) datagram(i int) ([]byte, netip.AddrPort) {
	m := &rb.msgs[i]
	return m.Buffers[0][:m.N], rb.sys.from(i)
}

// pending reports whether datagrams of the last read wait to be handled.
func (rb *readBatch) pending() bool { return rb.next < rb.n }

// handle calls f with each datagram of the last read not handled yet,
// in order: each entry, or each segment of a GRO run (the last may be
// shorter). Before each, it asks pause (when not nil) and returns if
// told to: the next call goes on from there. It returns how many GRO
// runs it started.
func (rb *readBatch) handle(f func(b []byte, from netip.AddrPort), pause func() bool) (runs int) {
	for ; rb.next < rb.n; rb.next, rb.off = rb.next+1, 0 {
		b, from := rb.datagram(rb.next)
		seg := 0
		if rb.gro {
			m := &rb.msgs[rb.next]
			seg = groSegment(m.OOB[:m.NN])
		}
		if seg <= 0 || seg >= len(b) {
			if pause != nil && pause() {
				return runs
			}
			f(b, from)
			continue
		}
		if rb.off == 0 {
			runs++
		}
		for rb.off < len(b) {
			if pause != nil && pause() {
				return runs
			}
			k := min(seg, len(b)-rb.off)
			f(b[rb.off:rb.off+k], from)
			rb.off += k
		}
	}
	return runs
}
