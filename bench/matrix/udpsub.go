package matrix

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"time"
)

// pollEvery is how often a blocking read looks at its context.
const pollEvery = 100 * time.Millisecond

// dropper drops a fraction of what arrives, on purpose.
type dropper struct {
	p float64
	r *rand.Rand
}

func newDropper(p float64, seed int64, sub int) *dropper {
	return &dropper{p: p, r: rand.New(rand.NewPCG(uint64(seed), uint64(sub)+1))}
}

func (d *dropper) drop() bool { return d.p > 0 && d.r.Float64() < d.p }

// readLoop reads datagrams from c until ctx is done, renewing the read
// deadline only when it expires (a deadline per read would cost more
// than what is measured).
func readLoop(ctx context.Context, c *net.UDPConn, fn func(b []byte)) error {
	buf := make([]byte, 65536)
	_ = c.SetReadDeadline(time.Now().Add(pollEvery))
	for {
		n, _, err := c.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if ctx.Err() != nil {
					return nil
				}
				_ = c.SetReadDeadline(time.Now().Add(pollEvery))
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fn(buf[:n])
	}
}

// udpSocketBuffer is what raw UDP sockets ask for, as our multicast
// transport does by default (4 MiB each way).
const udpSocketBuffer = 4 << 20

func listenUDP() (*net.UDPConn, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(udpSocketBuffer)
	_ = c.SetWriteBuffer(udpSocketBuffer)
	return c, nil
}
