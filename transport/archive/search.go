package archive

import (
	"context"
	"math"

	"github.com/brokerless/brokerless/transport"
)

// find returns the log position to read from to get the feed's first
// record at or after target (a message at target or later, or a gap
// marker whose range reaches it): every record of the feed before it
// comes before target. first and next are the stream's bounds.
//
// The feed's records are ordered by position (see the package
// documentation), so this is a search over [first, next): the feed's
// last record first — when it is of target's session, the difference
// of sequence numbers says where target is at the earliest, unless
// records of other streams come between (a record takes one log position
// and at least one sequence number), and reading from there is usually
// exact — then bisection, each read narrowing the range by every record
// it returns.
func (r *Reader) find(ctx context.Context, target Pos, first, next uint64) (uint64, error) {
	lo, hi := first, next
	if lo >= hi {
		return lo, nil
	}
	guess, hasGuess := uint64(0), false
	h, hinted := r.hintFor(target.Session)
	last, ok, err := r.lastOf(ctx, r.stream, hi-1, hi)
	if err != nil {
		return 0, err
	}
	if ok {
		if r.lastEnd {
			last = endOrder(last)
		}
		if last.Less(target) {
			return hi, nil
		}
		if last.Session == target.Session {
			// Without records of other streams between, target's record
			// is at guess or after it: read from just before, where the
			// record read first comes before target and the next one is
			// it.
			guess, hasGuess = hi-1-min(last.Seq-target.Seq, hi-1-lo), true
			if guess > lo {
				guess--
			}
		}
	}
	if !hasGuess && hinted && h.off >= lo && h.off < hi {
		// The log's last record is of a later session (a restart, or
		// other feeds): guess from the last record of target's session
		// read, in the same way. Where another stream's records lie
		// between, the guess falls short of target (the search reads
		// on) or past it (it bisects before the guess).
		if target.Seq >= h.pos.Seq {
			guess = h.off + min(target.Seq-h.pos.Seq, hi-1-h.off)
		} else {
			guess = h.off - min(h.pos.Seq-target.Seq, h.off-lo)
		}
		if guess > lo {
			guess--
		}
		hasGuess = true
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if hi-lo <= r.span {
			mid = lo // one read may cover what is left
		}
		if hasGuess {
			mid, hasGuess = guess, false
		}
		var err error
		if lo, hi, err = r.probe(ctx, target, lo, mid, hi); err != nil || lo == hi {
			return lo, err
		}
	}
	return lo, nil
}

// probe narrows the search for target in [lo, hi) by reading from mid:
// the feed's records from there, read on past records of other streams
// until one of the feed's, tell on which side target is. It returns the
// new range, empty (lo == hi) when it found where to read from.
func (r *Reader) probe(ctx context.Context, target Pos, lo, mid, hi uint64) (uint64, uint64, error) {
	sawFeed := false // a record of the feed before target was read from mid on
	for scan := mid; scan < hi; {
		r.stats.Probes++
		ms, err := r.log.Read(ctx, r.stream, scan)
		if err != nil {
			return lo, hi, err
		}
		r.span = max(r.span, uint64(len(ms)))
		for i := range ms {
			off := ms[i].Seq
			if off >= hi {
				break
			}
			scan = off + 1
			var ev transport.Event
			p, mine := r.takePos(&ms[i], &ev)
			if mine && ev.Kind == transport.EventStreamEnd {
				p = endOrder(p)
			}
			switch {
			case !mine:
			case p.Less(target):
				sawFeed = true
			case sawFeed || mid == lo:
				// Every record of the feed before off comes before target.
				return off, off, nil
			default:
				// The feed's first record from mid on is at or after
				// target: what is wanted is before mid, or it.
				return lo, mid, nil
			}
		}
		if sawFeed {
			return scan, hi, nil
		}
		if len(ms) == 0 || ms[len(ms)-1].Seq >= hi {
			break
		}
	}
	if sawFeed {
		return hi, hi, nil
	}
	return lo, mid, nil // nothing of the feed from mid on
}

// endOrder is where an end marker at p (its session's last position)
// falls in a search: after every position of its session, at the one
// past p, the first its session never had. At(p) then finds the
// session's last record before it, and At of the position after lands
// on it — where a replay looking for the tail of a session whose
// messages it all had (ended for silence) starts: it must read the end
// marker that says the publisher closed it.
func endOrder(p Pos) Pos {
	if p.Seq < math.MaxUint64 {
		p.Seq++
	}
	return p
}
