package pipe

import (
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

// Resume learns from the destination's last records (see
// transport.TailReader) what the pipe had written before it restarted:
// for each source stream, the positions written, by a message or a
// gap marker. Events of those streams at those positions are then
// dropped, and a gap marker is written where a stream's first event
// comes later than the position after the last (transport.GapSourceDown).
// Only the positions the records read hold are taken as written: one
// missing between them (a write the destination refused while it
// accepted the ones after it), given again, is written (see run); so
// is one of a log's stream older than the oldest read, once looked for
// further back (LookFor). A feed's positions older than the oldest read
// are taken as written (see run). Called again, it adds what it reads to what
// the calls before read.
// Records without origin headers were not written by a pipe and are
// ignored; so are those whose origin headers do not decode (anyone may
// write to a log), counted (Stats.MalformedTail, TailError). A
// destination stream's tail of DefaultTailRecords records may not reach
// back to every source stream: a Pipe given the destination's
// transport.BackReader (Config.Back) looks further back for one it
// meets (see LookFor); one not found where the destination was not read
// back to its start, whose first event comes past its first position
// (a log's: any), is counted (Stats.Unresumed).
// Call it before the first Event of the streams it is to resume. It
// returns how many source streams it found, and ErrSplitStream when one
// source stream is spread over several destination streams (the Core is
// then left as it was).
//
// Nothing fences a killed predecessor's writes: one the destination
// shows only after tail was read (still being fsynced or replicated)
// is not in tail, so a resume gap marker may cover messages that the
// destination holds after all (Kafka's answer, a transactional id that
// fences the old producer's epoch, is not implemented by logd).
func (c *Core) Resume(tail []transport.Message) (int, error) {
	return c.resume(tail, false, false)
}

// ResumeAcknowledged is Resume for a source that is acknowledged (a
// consumer group): what the destination holds is dropped, and
// acknowledged, so that what a killed pipe wrote and had not yet
// acknowledged — or whose acknowledgement the source had not yet made
// durable (a Kafka group commits every few seconds) — is not written
// twice. The source says where it resumes, so no resume gap marker is
// written, and a stream not found in tail is not counted. A source
// stream whose positions go backwards in tail (written by two pipes, of
// two clusters whose topics share a name, or by several in turn) is
// not resumed, and counted (Stats.Interleaved): it is written at least
// once, as if the destination did not hold it, rather than dropped
// after another source's position.
func (c *Core) ResumeAcknowledged(tail []transport.Message) (int, error) {
	return c.resume(tail, true, false)
}

// resume is Resume, or ResumeAcknowledged with dropOnly; fresh (Reread)
// looks each destination stream back from where tail starts.
func (c *Core) resume(tail []transport.Message, dropOnly, fresh bool) (int, error) {
	owner := map[transport.StreamID]transport.StreamID{}
	last := map[transport.StreamID]uint64{}
	ended := map[transport.StreamID]bool{} // an end marker is in tail
	back := map[transport.StreamID]bool{}  // positions went backwards
	spans := map[transport.StreamID][]run{}
	var malformed uint64
	held := map[transport.StreamID]int{}
	oldest := map[transport.StreamID]uint64{} // each destination stream's first position in tail
	for i := range tail {
		m := &tail[i]
		if held[m.Stream] == 0 {
			oldest[m.Stream] = m.Seq
		}
		held[m.Stream]++
		src, from, pos, end, ok, err := span(m)
		if err != nil {
			malformed++
			if c.tailErr == nil {
				c.tailErr = fmt.Errorf("%s offset %d: %w", m.Stream, m.Seq, err)
			}
			continue
		}
		if !ok {
			continue
		}
		if o, seen := owner[src]; seen && o != m.Stream {
			return 0, fmt.Errorf("%w: %s is in %s and %s", ErrSplitStream, src, o, m.Stream)
		}
		owner[src] = m.Stream
		if l, seen := last[src]; seen && pos < l {
			back[src] = true
		}
		last[src] = max(last[src], pos)
		ended[src] = ended[src] || end
		if !end {
			spans[src] = append(spans[src], run{from, pos})
		}
	}
	if fresh {
		c.forgetShrunk(tail)
		// A full read of each destination stream's tail: where each
		// ends now, lower than before when the destination shrank (made
		// again), so that a later read of what is new (Unread) reaches
		// back to it, not to the end of what the destination held.
		clear(c.ends)
	}
	for i := range tail { // read, once nothing failed
		c.ends[tail[i].Stream] = max(c.ends[tail[i].Stream], tail[i].Seq+1)
	}
	if dropOnly {
		// A stream found going backwards before stays unresumed: what
		// is read of it now (only what is new, RereadSince) may not
		// show it going backwards again.
		for src := range last {
			if c.decided[src] && c.resumed[src] == nil {
				back[src] = true
			}
		}
		// Positions of one source stream that go backwards were not
		// written by one pipe in order: two pipes write the same
		// topic and partition of two clusters into one destination,
		// or several wrote in turn. Their highest says nothing of
		// what this source sent: the stream is not resumed, nor
		// looked for further back (LookFor), where an older run of
		// the other's positions would resume it after all.
		for src := range back {
			delete(last, src)
			delete(c.resumed, src)
			if !c.decided[src] {
				c.stats.Interleaved++
			}
			c.decided[src] = true
		}
	}
	c.curOK = false // resumed changes
	for dest, n := range held {
		if n < DefaultTailRecords {
			if fresh {
				delete(c.deep, dest) // read to its start
			}
			continue
		}
		if l := c.deep[dest]; fresh || l == nil || oldest[dest] < l.before {
			c.deep[dest] = &lookback{before: oldest[dest]}
		}
	}
	c.dropOnly = dropOnly
	c.stats.MalformedTail += malformed
	for src, pos := range last {
		r := c.resumed[src]
		if r == nil {
			r = &resume{last: pos, feed: src.Topic == ""}
			c.resumed[src] = r
		}
		// Found by an earlier call too: a position either reading
		// held is held (see addHeld).
		c.stats.HeldRunsDropped += uint64(r.addHeld(spans[src]))
		r.dest = owner[src]
		r.last = max(r.last, pos)
		r.ended = r.ended || ended[src]
	}
	return len(owner), nil
}

// forgetShrunk forgets, before a full read of the destination's tail
// (Reread) is taken, what was read before of each destination stream
// that now ends before it (tail's last record of it is older than the
// last read) or holds nothing (none in tail): a destination deleted and
// made again, or truncated, no longer holds it. The source streams
// found there are resumed from tail alone then, not from positions the
// destination lost, which the source's messages at them would be
// dropped (and acknowledged) for. Forgetting costs at most writing
// again what the destination still holds, older than tail (the pipe's
// own writes in flight and other members' included), which a look-back
// (LookFor) finds where it reaches; keeping could lose it.
func (c *Core) forgetShrunk(tail []transport.Message) {
	end := map[transport.StreamID]uint64{}
	for i := range tail {
		end[tail[i].Stream] = max(end[tail[i].Stream], tail[i].Seq+1)
	}
	shrunk := map[transport.StreamID]bool{}
	for dest, read := range c.ends {
		if end[dest] < read { // 0 when it holds nothing
			shrunk[dest] = true
			delete(c.deep, dest)
		}
	}
	if len(shrunk) == 0 {
		return
	}
	for src, r := range c.resumed {
		if shrunk[r.dest] {
			delete(c.resumed, src)
			delete(c.decided, src) // looked for again (LookFor)
		}
	}
	c.curOK = false
}

// TailError is the first malformed origin header Resume found (nil if
// none; Stats.MalformedTail counts them), with the destination stream
// and position of its record.
func (c *Core) TailError() error { return c.tailErr }
