//go:build !linux

package statsd

import (
	"net"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// newBatchReader returns a function that reads up to len(ms) datagrams
// from c into the buffers of ms, setting their N and Flags, with x/net's
// ReadBatch (one datagram a call where the system has no recvmmsg),
// and a function to call once reading is over (nothing to do here).
func newBatchReader(c *net.UDPConn, ms []ipv4.Message) (read func() (int, error), done func(), err error) {
	if c.LocalAddr().(*net.UDPAddr).IP.To4() != nil {
		p := ipv4.NewPacketConn(c)
		return func() (int, error) { return p.ReadBatch(ms, 0) }, func() {}, nil
	}
	p := ipv6.NewPacketConn(c)
	return func() (int, error) { return p.ReadBatch(ms, 0) }, func() {}, nil
}
