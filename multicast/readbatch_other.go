//go:build !linux

package multicast

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

// sysBatch reads a batch through x/net's ReadBatch (one datagram a call
// where the system has no recvmmsg).
type sysBatch struct {
	pc *ipv4.PacketConn
	ms []ipv4.Message
}

func newSysBatch(c *net.UDPConn, ms []ipv4.Message) (*sysBatch, error) {
	return &sysBatch{pc: ipv4.NewPacketConn(c), ms: ms}, nil
}

func (s *sysBatch) read() (int, error) { return s.pc.ReadBatch(s.ms, 0) }

// readNow reads nothing here: ReadBatch cannot be told not to wait.
func (s *sysBatch) readNow() (int, error) { return 0, nil }

// canPoll: readNow cannot look at the socket here, so Config.Spin does
// not spin (it would only delay what comes meanwhile).
const canPoll = false

func (s *sysBatch) from(i int) netip.AddrPort {
	if a, ok := s.ms[i].Addr.(*net.UDPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}
