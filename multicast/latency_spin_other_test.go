//go:build !linux

package multicast

import (
	"net"
	"time"
)

// spinRead does not spin where read(2) is not at hand: the raw side of
// BROKERLESS_LATENCY_SPIN then sleeps in the poller at once.
func spinRead(*net.UDPConn, []byte, time.Duration) (int, bool) { return 0, false }
