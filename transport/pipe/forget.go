package pipe

import "github.com/brokerless/brokerless/transport"

// endedKeep is how many ended feed streams a Core remembers (endedRing).
const endedKeep = 64

// forget drops what the core keeps of a feed's stream that ended: a
// feed has a new session at every publisher restart, and anyone may
// start sessions on a group without a key, so over a pipe's life the
// streams it met are unbounded; each would stay in own, resumed and
// decided for good. A log's streams (partitions: a topic's, bounded)
// are kept: one revoked from a group member comes back, and what the
// destination held of it still counts.
//
// A feed stream that ended idle comes back if its publisher speaks
// again (package reliable resumes it, past end.LastSeq); the last
// endedKeep ended are remembered so that one is not counted Unresumed
// then. What the destination held of one that ended idle short of it
// (a session replaying its window after the pipe's restart, silent
// before it got there) is kept, so that the session, back, does not
// write it again; it goes when the session ends past it. resumed holds
// only what Resume and AddPage found, so what is kept is bounded by what
// they read.
func (c *Core) forget(end transport.StreamEnd) {
	stream := end.Stream
	if stream.Topic != "" {
		return
	}
	delete(c.own, stream)
	if r := c.resumed[stream]; r == nil || end.Reason != transport.EndIdle || r.last <= end.LastSeq {
		delete(c.resumed, stream)
	}
	delete(c.decided, stream)
	c.ended.add(stream)
	c.curOK = false
}

// endedRing holds the last endedKeep streams added.
type endedRing struct {
	ids  [endedKeep]transport.StreamID
	next int
	n    int
}

func (r *endedRing) add(id transport.StreamID) {
	r.ids[r.next] = id
	r.next = (r.next + 1) % endedKeep
	r.n = min(r.n+1, endedKeep)
}

func (r *endedRing) has(id transport.StreamID) bool {
	for i := range r.n {
		if r.ids[i] == id {
			return true
		}
	}
	return false
}
