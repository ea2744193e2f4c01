package pipe

import (
	"context"
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

// lookback is how far back a destination stream whose tail was full has
// been read: not its records before position before; read counts those
// read back beyond the tail.
type lookback struct {
	before uint64
	read   int
}

// LookFor says where to read next, further back in the destination than
// the tail given to Resume, for the last position written of source
// stream src, whose first event (at position pos) is at hand: the page of
// destination stream dest before position before. ok is false when no
// page is needed: src is one of the source's already, or found (in the
// tail or a page read before) back to pos (a stream found is looked for
// further back while pos is older than the oldest position read of it:
// see run), or a feed's (which does not wait for the read: only a log's
// stream is looked for), or every destination stream whose tail was
// full was read back to its start or to limit records, or the read of
// the destination at src's start failed (RereadFailed). Feed each page
// read to AddPage before calling LookFor again, and call it before Event
// for that event.
func (c *Core) LookFor(src transport.StreamID, pos uint64, limit int) (dest transport.StreamID, before uint64, ok bool) {
	// A feed's stream (no topic) is not looked for: reading back would
	// delay the feed, whose publisher keeps only a window, past what the
	// socket holds.
	if len(c.deep) == 0 || src.Topic == "" || c.isOwn(src) || c.rereadOK && c.rereadFailed && src == c.reread {
		return transport.StreamID{}, 0, false
	}
	if r := c.resumed[src]; r != nil {
		// Found: looked for further back only while pos is older than
		// what was read of it (see run), in the stream it was found in.
		l := c.deep[r.dest]
		if first, ok := r.oldest(); (ok && pos >= first) || l == nil || l.read >= limit {
			return transport.StreamID{}, 0, false
		}
		return r.dest, l.before, true
	}
	if c.decided[src] {
		return transport.StreamID{}, 0, false
	}
	for d, l := range c.deep {
		if l.read < limit {
			return d, l.before, true
		}
	}
	return transport.StreamID{}, 0, false
}

// AddPage takes the page that LookFor asked for, of at most n records
// (fewer: it reaches dest's start). Each source stream met there for
// the first time, newest page first, ends where its last record in the
// page does, as in Resume's tail; the positions the page holds of it,
// and of a stream found before in dest, are taken as held (see run);
// for a source that is acknowledged, one whose positions go backwards
// in the page, or reach what was read of it already, is not resumed
// (counted, Stats.Interleaved). A source stream split over several
// destination streams resumes from the first of them a page finds it in.
func (c *Core) AddPage(dest transport.StreamID, page []transport.Message, n int) {
	l := c.deep[dest]
	if l == nil {
		return
	}
	c.stats.LookedBack += uint64(len(page))
	if len(page) < n || len(page) == 0 || page[0].Seq >= l.before {
		delete(c.deep, dest) // read to its start
	} else {
		l.before, l.read = page[0].Seq, l.read+len(page)
	}
	last := map[transport.StreamID]uint64{}
	ended := map[transport.StreamID]bool{}
	back := map[transport.StreamID]bool{}
	spans := map[transport.StreamID][]run{}
	for i := range page {
		src, from, pos, end, ok, err := span(&page[i])
		if err != nil {
			c.stats.MalformedTail++
			if c.tailErr == nil {
				c.tailErr = fmt.Errorf("%s offset %d: %w", page[i].Stream, page[i].Seq, err)
			}
			continue
		}
		if !ok || c.isOwn(src) {
			continue
		}
		r := c.resumed[src]
		if r != nil && r.dest != dest || r == nil && c.decided[src] {
			continue
		}
		if l, seen := last[src]; seen && pos < l {
			back[src] = true
		}
		if r != nil {
			// Older than what was read of it, in order, if one pipe
			// wrote it (see resume). A feed's first run reaches down
			// to 0 (see run): not what was read of it.
			if first, ok := r.oldest(); ok && !r.feed && pos >= first {
				back[src] = true
			}
		}
		last[src] = max(last[src], pos)
		ended[src] = ended[src] || end
		if !end {
			spans[src] = append(spans[src], run{from, pos})
		}
	}
	for src, pos := range last {
		c.decided[src] = true
		if c.dropOnly && back[src] {
			c.stats.Interleaved++
			delete(spans, src)
			delete(c.resumed, src)
			continue
		}
		if c.resumed[src] == nil {
			c.stats.FoundBack++
			c.resumed[src] = &resume{last: pos, ended: ended[src], dest: dest, feed: src.Topic == ""}
		}
	}
	for src, s := range spans {
		c.stats.HeldRunsDropped += uint64(c.resumed[src].addHeld(s))
	}
	c.curOK = false // resumed changes
}

// lookBack reads the destination (Config.Back) further back, page by
// page, until the core knows where ev's stream resumes (or that the
// destination, as far back as MaxLookback, does not hold it). A read
// that fails fails the pipe (forward): going on would write again what
// the destination may hold. At the start of a stream that the
// destination is read again for (Config.Tail), it is part of that read
// (reread): bounded by its deadline, and one that fails does not fail
// the pipe.
func (p *Pipe) lookBack(ctx context.Context, ev *transport.Event) error {
	src, pos, _ := eventPosition(ev)
	for {
		p.mu.Lock()
		dest, before, ok := p.core.LookFor(src, pos, p.cfg.MaxLookback)
		p.mu.Unlock()
		if !ok {
			return nil
		}
		page, err := p.cfg.Back.Before(ctx, dest, before, LookbackPage)
		if err != nil {
			return fmt.Errorf("pipe: reading %s before position %d, for where %s resumes: %w", dest, before, src, err)
		}
		p.mu.Lock()
		p.core.AddPage(dest, page, LookbackPage)
		p.mu.Unlock()
	}
}

// eventPosition is the stream of ev and its position as Core.Event
// first looks at it: a message's, a gap's first, a stream start's
// first; ok is false for an event of no position (a stream's end).
func eventPosition(ev *transport.Event) (_ transport.StreamID, pos uint64, ok bool) {
	switch ev.Kind {
	case transport.EventMessage:
		return ev.Message.Stream, ev.Message.Seq, true
	case transport.EventGap:
		return ev.Gap.Stream, ev.Gap.From, true
	case transport.EventStreamStart:
		return ev.Start.Stream, ev.Start.FirstSeq, true
	}
	return transport.StreamID{}, 0, false
}
