//go:build !linux

package pipe_test

import (
	"net/netip"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// feedCapture: the replayed feed of BenchmarkRecorder needs Linux
// (sendmmsg with UDP GSO); elsewhere captureFeed returns nil and the
// benchmark measures the live feed only.
type feedCapture struct{ stream transport.StreamID }

func captureFeed(testing.TB, [][]byte, int, int) *feedCapture { return nil }

func (c *feedCapture) messages() int { return 0 }

func (c *feedCapture) replay(b testing.TB, _ netip.AddrPort, _ float64, _, _ int, _ bool) (float64, func()) {
	b.Fatal("no replayed feed on this system")
	return 0, nil
}

func (c *feedCapture) datagrams() int { return 0 }
