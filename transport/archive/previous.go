package archive

import "context"

// previousSpan is how many log records Previous reads at a time, going
// back from its position.
const previousSpan = 1024

// Previous returns the position of the feed's last record before the
// reader's position (Position), and whether it is an end marker; ok is
// false when there is none (the log holds nothing of the feed before
// the position). It reads back previousSpan log records at a time until
// it finds one or reaches the log's start, however many records of
// other feeds lie between: ctx bounds how long it may take. After a
// Seek to a time it tells what the log holds of the feed from before
// that time: whether the recorder had the session of the first record
// at or after it before, or where a session that ended before it
// stops.
func (r *Reader) Previous(ctx context.Context) (p Pos, end, ok bool, err error) {
	if !r.seeked {
		return p, false, false, ErrNotPositioned
	}
	first, _, err := r.log.Bounds(ctx, r.stream)
	if err != nil {
		return p, false, false, err
	}
	for to := r.pos; to > first && !ok; {
		if err := ctx.Err(); err != nil {
			return Pos{}, false, false, err
		}
		from := max(first, to-min(to, previousSpan))
		if p, ok, err = r.lastOf(ctx, r.stream, from, to); err != nil {
			return Pos{}, false, false, err
		}
		to = from
	}
	return p, ok && r.lastEnd, ok, nil
}
