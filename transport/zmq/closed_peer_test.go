package zmq

import (
	"net"
	"testing"
	"time"
)

// TestPingAfterCloseArmsNoTimer: a PING the reader still finds in what
// it read ahead once the peer is closed (a slow subscriber disconnected,
// a heartbeat timeout, Close) arms no TTL timer: it used to re-arm the
// timer close had stopped, which then held the closed peer, its
// buffers among it, for up to the TTL the PING asked for (6553.5s).
func TestPingAfterCloseArmsNoTimer(t *testing.T) {
	s := newSocket(socketConfig{queueItems: 1, queueBytes: 1, pending: 1 << 20, frameTime: time.Second})
	a, b := net.Pipe()
	defer b.Close()
	p := newPeer(s, a)
	p.close()
	p.onPing(time.Hour, []byte("late"))
	p.ctl.mu.Lock()
	defer p.ctl.mu.Unlock()
	if p.ctl.timer != nil && p.ctl.timer.Stop() {
		t.Error("a PING read after close armed the peer's timer (its TTL would hold the closed peer)")
	}
}
