package multicast

import (
	"context"

	"github.com/brokerless/brokerless/transport"
)

// PublishBatch is Publish of each message of ms in turn, at a fraction
// of the cost for small messages: the publisher's lock is taken once
// for every publishChunk messages instead of once a message, and the
// clock is read once each time it is taken (and again after waiting),
// so the messages without a Time of a chunk share its publish time,
// and times never go back along the stream. It returns how
// many of ms it took, and why not all when it took fewer: ctx ended
// while flow control or the full send queue held a message, the
// Publisher was closed, flow control refused one (Config.FlowFail), or
// a message was too large (transport.ErrTooLarge); it takes the
// messages before that one and none after it.
//
// While it packs, the send goroutine is woken to write what is packed
// so far, so a long batch leaves in runs of full datagrams as a tight
// loop of Publish calls does; the lock is let go meanwhile, so another
// goroutine's Publish may put its messages between a batch's.
func (p *Publisher) PublishBatch(ctx context.Context, ms []transport.Message) (int, error) {
	return p.publishBatch(ctx, ms, nil)
}

// PublishReceipts is PublishReceipt of each message of ms in turn, done
// called with its index, at PublishBatch's cost: done is called as
// PublishReceipt's is (once per message taken, in publish order, on the
// send goroutine, before Close returns; it must not block nor call the
// Publisher). It returns as PublishBatch does. Pipes find it by type
// assertion and hand their batches to it. A nil done makes it
// PublishBatch.
func (p *Publisher) PublishReceipts(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error) {
	return p.publishBatch(ctx, ms, done)
}

// publishChunk is how many messages a batch packs before it lets the
// send goroutine at the lock: some 3 datagrams of 64-byte messages, so
// that the send goroutine finds full datagrams when it takes them.
const publishChunk = 64

func (p *Publisher) publishBatch(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	now := p.publishNow()
	waitedAny := false
	for i := range ms {
		if i > 0 && i%publishChunk == 0 {
			p.wakeSender()
			p.mu.Lock()
			// Another call may have taken the lock meanwhile: the
			// messages after its must not carry an earlier time.
			now = p.publishNow()
		}
		waited, err := p.enqueue(ctx, &now, &ms[i], pendingReceipt{batchDone: done, index: i})
		if err != nil {
			if i > 0 {
				p.wakeSender() // for the messages taken before ms[i]
			} else {
				p.mu.Unlock()
			}
			return i, err
		}
		waitedAny = waitedAny || waited
	}
	p.handOff(now, waitedAny)
	return len(ms), nil
}
