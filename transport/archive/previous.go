package archive

import "context"

// previousSpan is how many log records before its position Previous
// reads at most.
const previousSpan = 1024

// Previous returns the position of the feed's last record before the
// reader's position (Position), found among the 1024 log records before
// it, and whether it is an end marker; ok is false when there is none
// (the log holds nothing of the feed before the position, or only
// further back). After a Seek to a time it tells what the log holds of
// the feed from before that time: whether the recorder had the session
// of the first record at or after it before, or where a session that
// ended before it stops.
func (r *Reader) Previous(ctx context.Context) (p Pos, end, ok bool, err error) {
	if !r.seeked {
		return p, false, false, ErrNotPositioned
	}
	first, _, err := r.log.Bounds(ctx, r.stream)
	if err != nil || r.pos <= first {
		return p, false, false, err
	}
	p, ok, err = r.lastOf(ctx, r.stream, max(first, r.pos-min(r.pos, previousSpan)), r.pos)
	return p, ok && r.lastEnd, ok, err
}
