package pipe

import "github.com/brokerless/brokerless/transport"

// endedKeep is how many feed sessions that ended idle a Core remembers
// (endedSet).
const endedKeep = 1024

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
// endedKeep that ended idle are remembered so that one is not counted
// Unresumed then (one that ended closed or replaced never comes back,
// and is not remembered); those pushed out are counted
// (Stats.EndedForgotten). What the destination held of one that ended
// idle short of it (a session replaying its window after the pipe's
// restart, silent before it got there) is kept, so that the session,
// back, does not write it again; it goes when the session ends past
// it. resumed holds only what Resume, Reread and AddPage found, so
// what is kept is bounded by what they read.
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
	if end.Reason == transport.EndIdle && c.ended.add(stream) {
		c.stats.EndedForgotten++
	}
	c.curOK = false
}

// endedSet holds the last endedKeep streams added.
type endedSet struct {
	ids  []transport.StreamID // a ring, once endedKeep long
	next int                  // where the next goes, once it is
	in   map[transport.StreamID]struct{}
}

// add remembers id, unless it is already, and reports whether it forgot
// the oldest to keep endedKeep.
func (r *endedSet) add(id transport.StreamID) (forgot bool) {
	if _, ok := r.in[id]; ok {
		return false
	}
	if r.in == nil {
		r.in = map[transport.StreamID]struct{}{}
	}
	if len(r.ids) < endedKeep {
		r.ids = append(r.ids, id)
	} else {
		delete(r.in, r.ids[r.next])
		r.ids[r.next] = id
		r.next = (r.next + 1) % endedKeep
		forgot = true
	}
	r.in[id] = struct{}{}
	return forgot
}

func (r *endedSet) has(id transport.StreamID) bool {
	_, ok := r.in[id]
	return ok
}
