package zmq

import (
	"net"
	"testing"
)

// TestHeartbeatDropNotCounted: a heartbeat that finds a subscriber's
// queue full is dropped without counting in Dropped or DroppedZMTP,
// which count the messages lost and the ZMTP messages they were in: it
// used to count a ZMTP message of no message, so that DroppedZMTP said
// a pack was lost where nothing was.
func TestHeartbeatDropNotCounted(t *testing.T) {
	s := newSocket(socketConfig{queueItems: 1, queueBytes: 1 << 20, pending: 1 << 20})
	a, b := net.Pipe()
	defer b.Close()
	p := newPeer(s, a)
	defer p.close()
	sub := &subscriber{prefixes: map[string]struct{}{"": {}}}
	sub.lens[0] = 1
	p.state = sub
	s.peers[p] = struct{}{}
	f := &fanout{sock: s}
	topic := []byte("t")
	data := zmsg{frames: [][]byte{topic, {1}, {2}}, size: 100, msgs: 1, mark: 1}
	hb := zmsg{frames: [][]byte{topic, {3}}, size: 100, mark: 2}
	f.offer(data, topic) // fills the queue
	f.offer(hb, topic)
	f.offer(zmsg{frames: data.frames, size: 100, msgs: 3, mark: 3}, topic)
	if d, z := f.stats.dropped.Load(), f.stats.droppedZMTP.Load(); d != 3 || z != 1 {
		t.Errorf("Dropped %d, DroppedZMTP %d after a heartbeat and a pack of 3 dropped: want 3 and 1", d, z)
	}
}
