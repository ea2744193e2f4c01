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
// where it now starts (LookFor). NeedsReread is then false for that
// start. On ErrSplitStream what was read before stands.
func (c *Core) Reread(stream transport.StreamID, tail []transport.Message) error {
	c.reread, c.rereadOK = stream, true
	_, err := c.resume(tail, true, true)
	return err
}

// NeedsReread reports whether ev is the start of a log's stream (one
// with a topic) that the destination was not read again for (Reread)
// since it was last started.
func (c *Core) NeedsReread(ev *transport.Event) bool {
	return ev.Kind == transport.EventStreamStart && ev.Start.Stream.Topic != "" &&
		!(c.rereadOK && c.reread == ev.Start.Stream)
}

// RereadFailed records that the destination could not be read again
// for stream (Config.Tail), which the source starts: what was read
// before stands, as without Config.Tail, and NeedsReread is then false
// for that start (Stats.RereadsFailed).
func (c *Core) RereadFailed(stream transport.StreamID) {
	c.reread, c.rereadOK = stream, true
	c.stats.RereadsFailed++
}

// reread reads the destination's last records again (Config.Tail) for
// stream, which the source starts, before its start is taken. A read
// that fails (a destination whose leader moves) does not fail the
// pipe, which goes on from what was read before, as without
// Config.Tail: what the stream's previous owner wrote and had not
// committed is written again, not lost.
func (p *Pipe) reread(ctx context.Context, stream transport.StreamID) error {
	tail, err := p.cfg.Tail.Tail(ctx, DefaultTailRecords)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.mu.Lock()
		p.core.RereadFailed(stream)
		p.mu.Unlock()
		return nil
	}
	p.mu.Lock()
	err = p.core.Reread(stream, tail)
	p.mu.Unlock()
	if errors.Is(err, ErrSplitStream) {
		return nil // what was read before stands: written again at worst
	}
	return err
}
