package multicast

import (
	"errors"
	"fmt"
	"net"

	"github.com/brokerless/brokerless/transport"
)

// pendingReceipt is a message published with PublishReceipt, or in
// PublishReceipts, whose done has not been called yet.
type pendingReceipt struct {
	first, last uint64 // sequence numbers of its first and last fragments
	done        func(transport.Receipt, error)
	batchDone   func(int, transport.Receipt, error) // PublishReceipts's, called with index
	index       int
	err         error // the outcome, once settled
}

// receipts is the queue of pending receipts, in publish order. A receipt
// is settled once the datagram carrying its message's last fragment has
// been written (see settle), and its done is then called by sendLoop, the
// only goroutine that calls them, so they come in publish order. Guarded
// by Publisher.mu. It holds as many receipts as there are messages
// waiting to be sent, which the engine's send queue bounds
// (reliable.SenderConfig.MaxQueued datagrams); it grows by doubling and
// is reused.
type receipts struct {
	q       []pendingReceipt // ring
	head, n int
	settled int // receipts from head that are settled

	// sentTo is the SentNext of the last datagram written; refusedTo is
	// the end of the last range of sequence numbers whose datagram the
	// kernel refused, with refusedErr the reason.
	sentTo, refusedTo uint64
	refusedErr        error
}

func (r *receipts) push(e pendingReceipt) {
	if r.n == len(r.q) {
		q := make([]pendingReceipt, max(16, 2*len(r.q))) // a power of two
		for i := 0; i < r.n; i++ {
			q[i] = *r.at(i)
		}
		r.q, r.head = q, 0
	}
	*r.at(r.n) = e
	r.n++
}

// at is the i-th receipt from head.
func (r *receipts) at(i int) *pendingReceipt { return &r.q[(r.head+i)&(len(r.q)-1)] }

// settle records that a datagram was written, err its outcome (nil: the
// kernel took it), whose NextOutgoing left SentNext at upto: it carried
// sequence numbers [sentTo, upto) for the first time. It settles every
// receipt whose last fragment is below upto, with the error of any
// refused datagram that carried part of it. Datagrams are settled in the
// order the engine handed them out.
func (r *receipts) settle(upto uint64, err error) {
	if err != nil && upto > r.sentTo {
		r.refusedTo, r.refusedErr = upto, sendError(err)
	}
	r.sentTo = max(r.sentTo, upto)
	for r.settled < r.n {
		e := r.at(r.settled)
		if e.last >= upto {
			return
		}
		if r.refusedTo > e.first {
			e.err = r.refusedErr
		}
		r.settled++
	}
}

// takeSettled appends the settled receipts to out, removes them, and
// returns out.
func (r *receipts) takeSettled(out []pendingReceipt) []pendingReceipt {
	return r.take(out, r.settled)
}

// takeAll is takeSettled for every receipt: those not settled get
// transport.ErrClosed.
func (r *receipts) takeAll(out []pendingReceipt) []pendingReceipt {
	for i := r.settled; i < r.n; i++ {
		r.at(i).err = transport.ErrClosed
	}
	return r.take(out, r.n)
}

func (r *receipts) take(out []pendingReceipt, k int) []pendingReceipt {
	for i := 0; i < k; i++ {
		e := r.at(i)
		out = append(out, *e)
		*e = pendingReceipt{}
	}
	if k > 0 {
		r.head = (r.head + k) & (len(r.q) - 1)
	}
	r.n -= k
	r.settled -= k
	return out
}

// sendError is what a receipt reports for a datagram the kernel refused.
func sendError(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return transport.ErrClosed
	}
	return fmt.Errorf("multicast: the kernel refused the datagram: %w", err)
}

// fire calls done for each receipt, then clears out for reuse. Called by
// sendLoop without Publisher.mu.
func fire(stream transport.StreamID, out []pendingReceipt) {
	for i := range out {
		r := transport.Receipt{Stream: stream, Seq: out[i].first}
		if out[i].batchDone != nil {
			out[i].batchDone(out[i].index, r, out[i].err)
		} else {
			out[i].done(r, out[i].err)
		}
		out[i] = pendingReceipt{}
	}
}
