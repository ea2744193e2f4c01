package multicast

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

// readBatch reads up to a batch of datagrams per system call
// (recvmmsg), into buffers it reuses. With GRO, an entry may hold a run
// of datagrams the kernel merged (see offload_linux.go).
type readBatch struct {
	sys  *sysBatch // readbatch_linux.go, readbatch_other.go
	msgs []ipv4.Message
	gro  bool
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
// got.
func (rb *readBatch) read() (int, error) { return rb.sys.read(rb.msgs) }

// datagram returns entry i of the last read and its source.
func (rb *readBatch) datagram(i int) ([]byte, netip.AddrPort) {
	m := &rb.msgs[i]
	return m.Buffers[0][:m.N], rb.sys.from(i)
}

// each calls f with every datagram of entry i of the last read: the
// entry itself, or each segment of a GRO run (the last may be shorter),
// and reports whether it was a run.
func (rb *readBatch) each(i int, f func(b []byte, from netip.AddrPort)) bool {
	b, from := rb.datagram(i)
	seg := 0
	if rb.gro {
		seg = groSegment(rb.msgs[i].OOB[:rb.msgs[i].NN])
	}
	if seg <= 0 || seg >= len(b) {
		f(b, from)
		return false
	}
	for len(b) > 0 {
		k := min(seg, len(b))
		f(b[:k], from)
		b = b[k:]
	}
	return true
}
