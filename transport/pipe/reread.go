package pipe

import (
	"context"
	"errors"

	"github.com/brokerless/brokerless/transport"
)

// Reread takes the destination's last records read again while an
// acknowledged source runs, when it starts stream (Config.Tail: a
// partition a rebalance gave this member): what they hold is added to
// what was read before, as a ResumeAcknowledged called again adds it,
// and each destination stream whose tail is full is looked back from
// where it now starts (LookFor). What was read before of a destination
// stream that now ends before it, or holds nothing (deleted and made
// again), is forgotten first (see forgetShrunk). NeedsReread is then
// false for that start. On ErrSplitStream what was read before stands.
func (c *Core) Reread(stream transport.StreamID, tail []transport.Message) error {
	c.reread, c.rereadOK, c.rereadFailed = stream, true, false
	_, err := c.resume(tail, true, true)
	return err
}

// Unread tells how much of the destination a Reread for a stream start
// must read, given last, the destination's last record of each of its
// streams (a transport.TailReader's Tail of 1): 0 when no stream holds
// a record past those read before (by Resume, Reread or RereadSince):
// nothing was written since, the start needs no read (RereadSince with
// none); else the records to read of each stream (RereadSince) to reach
// back to one read before, one more than the most positions a stream
// grew by. It is DefaultTailRecords, a full Reread, when that is a
// full tail or more (a stream grew by DefaultTailRecords-1, 1,023, or
// more), or a stream ends before what was read of it or holds nothing
// now (a destination deleted and made again: Reread then forgets what
// was read of it).
func (c *Core) Unread(last []transport.Message) int {
	grew := uint64(0)
	n := 0 // the streams read before that last holds
	for i := range last {
		if _, ok := c.ends[last[i].Stream]; ok {
			n++
		}
	}
	if n < len(c.ends) {
		return DefaultTailRecords // one holds nothing now
	}
	for i := range last {
		end, read := last[i].Seq+1, c.ends[last[i].Stream]
		if end < read {
			return DefaultTailRecords
		}
		grew = max(grew, end-read)
	}
	if grew == 0 {
		return 0
	}
	return int(min(grew+1, DefaultTailRecords))
}

// RereadSince is Reread of tail, the last n records of each destination
// stream, read after Unread said n (< DefaultTailRecords) for last: it
// adds what they hold, without looking destination streams back from
// where they start (with what was read before, what was read reaches
// back as far as before). It reports false, and takes nothing, when a
// destination stream's n records reach back neither to one read before
// nor to its start: more was written between last and tail, and a full
// Reread must be made. With n 0 it takes nothing: nothing was written.
func (c *Core) RereadSince(stream transport.StreamID, tail []transport.Message, n int) (bool, error) {
	count := map[transport.StreamID]int{}
	reaches := map[transport.StreamID]bool{} // a record read before is in tail
	for i := range tail {
		m := &tail[i]
		count[m.Stream]++
		reaches[m.Stream] = reaches[m.Stream] || m.Seq < c.ends[m.Stream]
	}
	for dest, k := range count {
		if k >= n && !reaches[dest] {
			return false, nil
		}
	}
	c.reread, c.rereadOK, c.rereadFailed = stream, true, false
	_, err := c.resume(tail, true, false)
	return true, err
}

// NeedsReread reports whether ev is the start of a log's stream (one
// with a topic) that the destination was not read again for (Reread)
// since it was last started.
func (c *Core) NeedsReread(ev *transport.Event) bool {
	return ev.Kind == transport.EventStreamStart && ev.Start.Stream.Topic != "" &&
		!(c.rereadOK && c.reread == ev.Start.Stream)
}

// RereadFailed records that the destination could not be read again
// for stream (Config.Tail), which the source starts, or looked back for
// it (LookFor) after a Reread or RereadSince: what was read before
// stands, as without Config.Tail, NeedsReread is then false for that
// start, and LookFor asks for no page for stream before it is taken
// (Stats.RereadsFailed).
func (c *Core) RereadFailed(stream transport.StreamID) {
	c.reread, c.rereadOK, c.rereadFailed = stream, true, true
	c.stats.RereadsFailed++
}

// reread reads the destination again (Config.Tail) for ev, the start
// of a log's stream, before it is taken: first each destination
// stream's last record, then only what was written since the pipe last
// read it (Core.Unread, Core.RereadSince), or, when that is too much or
// more was written meanwhile, the last DefaultTailRecords of each
// (Core.Reread); then, where those do not reach ev's stream, the pages
// further back that the core asks for (lookBack, Config.Back). A read
// that fails (a destination whose leader moves) does not fail the
// pipe, which goes on from what was read before, as without
// Config.Tail: what the stream's previous owner wrote and had not
// committed is written again, not lost; so does one that takes longer
// than Config.RereadTimeout, all reads together, pages included.
func (p *Pipe) reread(ctx context.Context, ev *transport.Event) error {
	stream := ev.Start.Stream
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RereadTimeout)
	defer cancel()
	read, err := p.readAgain(rctx, stream)
	if err != nil {
		return err
	}
	if read && p.cfg.Back != nil {
		read = p.lookBack(rctx, ev) == nil
	}
	if !read {
		return p.rereadFailed(ctx, stream)
	}
	return nil
}

// readAgain is reread's reads of the destination's tail, under ctx: read
// is false when one failed.
func (p *Pipe) readAgain(ctx context.Context, stream transport.StreamID) (read bool, _ error) {
	last, err := p.cfg.Tail.Tail(ctx, 1)
	if err != nil {
		return false, nil
	}
	p.mu.Lock()
	n := p.core.Unread(last)
	p.mu.Unlock()
	if n < DefaultTailRecords {
		var tail []transport.Message
		if n > 0 {
			if tail, err = p.cfg.Tail.Tail(ctx, n); err != nil {
				return false, nil
			}
		}
		p.mu.Lock()
		taken, err := p.core.RereadSince(stream, tail, n)
		p.mu.Unlock()
		if taken {
			return true, splitStands(err)
		}
	}
	tail, err := p.cfg.Tail.Tail(ctx, DefaultTailRecords)
	if err != nil {
		return false, nil
	}
	p.mu.Lock()
	err = p.core.Reread(stream, tail)
	p.mu.Unlock()
	return true, splitStands(err)
}

// rereadFailed records a read for stream that failed or timed out,
// unless ctx, the pipe's, ended (it returns ctx's error then).
func (p *Pipe) rereadFailed(ctx context.Context, stream transport.StreamID) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	p.mu.Lock()
	p.core.RereadFailed(stream)
	p.mu.Unlock()
	return nil
}

// splitStands is err of a Reread, but nil for ErrSplitStream: what was
// read before stands, written again at worst.
func splitStands(err error) error {
	if errors.Is(err, ErrSplitStream) {
		return nil
	}
	return err
}
