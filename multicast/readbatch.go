package multicast

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

// readBatch reads up to a batch of datagrams per system call
// (recvmmsg), into buffers it reuses.
type readBatch struct {
	pc   *ipv4.PacketConn
	msgs []ipv4.Message
}

func newReadBatch(c *net.UDPConn, n, size int) *readBatch {
	rb := &readBatch{pc: ipv4.NewPacketConn(c), msgs: make([]ipv4.Message, n)}
	for i := range rb.msgs {
		rb.msgs[i].Buffers = [][]byte{make([]byte, size)}
	}
	return rb
}

// read waits for at least one datagram and returns how many it got.
func (rb *readBatch) read() (int, error) { return rb.pc.ReadBatch(rb.msgs, 0) }

// datagram returns datagram i of the last read and its source.
func (rb *readBatch) datagram(i int) ([]byte, netip.AddrPort) {
	m := &rb.msgs[i]
	var from netip.AddrPort
	if a, ok := m.Addr.(*net.UDPAddr); ok {
		from = a.AddrPort()
	}
	return m.Buffers[0][:m.N], from
}
