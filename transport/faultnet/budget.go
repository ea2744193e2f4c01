package faultnet

import "sync"

// budget counts down the bytes a Conn lets through before it is cut.
// Writes reserve their bytes before writing, so concurrent writers never
// exceed it together, and the cut waits for the writes in progress to
// finish. Reads, which cannot know in advance how much will arrive, are
// charged afterwards; what exceeds the budget is discarded.
type budget struct {
	mu      sync.Mutex
	left    int64
	writing int // writes holding a reservation
	cut     bool
}

// reserve grants up to n bytes to a write, which must then call wrote;
// ok is false once cut.
func (b *budget) reserve(n int) (granted int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut {
		return 0, false
	}
	granted = int(min(int64(n), b.left))
	b.left -= int64(granted)
	b.writing++
	return granted, true
}

// wrote settles a reservation of which written bytes were used. It
// reports whether the connection must be cut now.
func (b *budget) wrote(granted, written int) (cutNow bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left += int64(granted - written)
	b.writing--
	return b.exhausted()
}

// readLimit caps a read of n bytes; ok is false once cut. While writes
// hold the whole remaining budget it does not cap, as those writes may
// yet give some back.
func (b *budget) readLimit(n int) (limit int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut {
		return 0, false
	}
	if b.left == 0 {
		return n, true
	}
	return int(min(int64(n), b.left)), true
}

// read charges n bytes read and returns how many of them fit the budget.
// cutNow reports whether the connection must be cut now.
func (b *budget) read(n int) (kept int, cutNow bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept = int(min(int64(n), b.left))
	b.left -= int64(kept)
	return kept, b.exhausted()
}

func (b *budget) isCut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cut
}

// exhausted marks the budget cut once it is spent and no write is in
// progress, reporting true the one time that happens. b.mu must be held.
func (b *budget) exhausted() bool {
	if b.left > 0 || b.writing > 0 || b.cut {
		return false
	}
	b.cut = true
	return true
}
