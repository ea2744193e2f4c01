package reliable

import "time"

// A Receiver tells each stream's publisher how far it has got with a
// STATUS: every StatusInterval, and as soon as it has taken a sixteenth
// of its StatusWindow since the last one (Aeron's receivers send their
// status messages at a quarter; with a quarter, a publisher sending
// faster than this receiver takes sat idle waiting for STATUS, costing
// 20-30% of the rate in BenchmarkFlowCost), so a publisher with flow
// control sends on well before the receiver's socket buffer could
// fill. A publisher without flow control ignores them.

// tookBytes counts n bytes of DATA taken for the stream, sending a
// STATUS once they reach a sixteenth of the window.
func (st *stream) tookBytes(n int) {
	if st.r.cfg.StatusInterval < 0 {
		return
	}
	st.statusBytes += n
	if st.statusBytes >= st.r.cfg.StatusWindow/16 {
		st.sendStatus()
	}
}

// statusDue sends the stream's STATUS when its interval has passed.
func (st *stream) statusDue() {
	if st.r.cfg.StatusInterval > 0 && st.synced && !st.r.now.Before(st.statusAt) {
		st.sendStatus()
	}
}

// statusDeadline is when the stream's next STATUS is due, zero if none.
func (st *stream) statusDeadline() time.Time {
	if st.r.cfg.StatusInterval <= 0 || !st.synced {
		return time.Time{}
	}
	return st.statusAt
}

func (st *stream) sendStatus() {
	r := st.r
	st.statusAt, st.statusBytes = r.now.Add(r.cfg.StatusInterval), 0
	st.writeStatus(false)
}

// Leave tells each stream's publisher that this receiver is going away,
// with a leaving STATUS (Status.Leaving), so that a publisher with flow
// control stops waiting for it at once instead of after its
// ReceiverTimeout. Call it once, as the receiver's owner closes, before
// the socket STATUS goes out on; the Receiver should not be used after.
// It sends nothing when STATUS is off (StatusInterval < 0).
func (r *Receiver) Leave(now time.Time, h Handler) {
	if r.cfg.StatusInterval < 0 {
		return
	}
	r.h, r.now = h, now
	defer r.finish()
	for _, st := range r.streams {
		st.writeStatus(true)
	}
}

// writeStatus sends the stream's STATUS, or its leaving STATUS, to its
// publisher once it knows where that is.
func (st *stream) writeStatus(leaving bool) {
	r := st.r
	if !st.synced || !st.source.IsValid() {
		return
	}
	r.status = AppendStatus(r.status[:0], st.id, Status{
		Receiver: r.cfg.ID,
		Next:     st.next,
		Window:   uint32(r.cfg.StatusWindow),
		Tag:      r.cfg.Tag,
		Leaving:  leaving,
	})
	if r.sealer != nil {
		r.status = r.status[:r.sealer.seal(r.status[:cap(r.status)], len(r.status))]
	}
	r.stats.StatusSent++
	r.h.SendStatus(st.source, r.status)
}
