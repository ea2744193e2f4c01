package matrix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// pingPong measures round trips over two links of c, one each way: the
// far side sends back each message it gets, and the near side sends the
// next message once the previous came back (or after PingTimeout, lost).
// Each time is taken by the side that sent, so two machines need no
// clock sync.
func (r *runner) pingPong(ctx context.Context, c Contender, cell Cell, round int) (outcome, error) {
	o := cell.Options(r.set.PingPongs, r.set.Seed+int64(round))
	o.Subscribers = 1
	fwd, err := c.Open(ctx, o)
	if err != nil {
		return outcome{}, err
	}
	defer fwd.Close()
	back, err := c.Open(ctx, o)
	if err != nil {
		return outcome{}, err
	}
	defer back.Close()
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = fwd.Subs()[0].Run(rctx, func(p []byte) {
			if back.Send(p) == nil {
				_ = back.Flush()
			}
		})
	}()
	pi := newPinger(fwd, cell.Size)
	go func() {
		defer wg.Done()
		errs[1] = back.Subs()[0].Run(rctx, pi.receive)
	}()
	defer func() { stop(); wg.Wait() }()
	if ok, err := pi.ready(ctx, r.set.ReadyTimeout); err != nil || !ok {
		return outcome{}, errors.Join(err, readyErr(ok, r.set.ReadyTimeout), errs[0], errs[1])
	}
	return pi.series(ctx, r.set.PingPongs, r.set.PingTimeout)
}

// readyErr says that no ping came back, when none did.
func readyErr(ok bool, within time.Duration) error {
	if ok {
		return nil
	}
	return fmt.Errorf("no ping came back in %v", within)
}

// pong is a ping come back: its sequence number and when it was sent.
type pong struct {
	seq uint64
	at  int64
}

// pinger sends stamped pings through fwd, one at a time, and times
// them when they come back to receive.
type pinger struct {
	fwd Link
	buf []byte
	ch  chan pong
	seq uint64
}

func newPinger(fwd Link, size int) *pinger {
	return &pinger{fwd: fwd, buf: make([]byte, size), ch: make(chan pong, 1024)}
}

// receive takes a message come back (a Sub's callback); a full queue
// drops it, counted as lost by the ping waiting for it.
func (p *pinger) receive(b []byte) {
	if seq, at, ok := unstamp(b); ok {
		select {
		case p.ch <- pong{seq, at}:
		default:
		}
	}
}

// ping sends the next ping and waits up to timeout for it: its round
// trip in ns, or ok false.
func (p *pinger) ping(ctx context.Context, timeout time.Duration) (rtt int64, ok bool, err error) {
	p.seq++
	stamp(p.buf, p.seq, now())
	if err := p.fwd.Send(p.buf); err != nil {
		return 0, false, err
	}
	if err := p.fwd.Flush(); err != nil {
		return 0, false, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case q := <-p.ch:
			if q.seq == p.seq {
				return now() - q.at, true, nil
			}
		case <-t.C:
			return 0, false, nil
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
}

// ready pings until one comes back (ok), waiting twice as long each time
// from 20 ms up to a second (a slow transport, or a slow build such as
// -race, answers later than the first pings wait), for at most within.
func (p *pinger) ready(ctx context.Context, within time.Duration) (bool, error) {
	deadline := time.Now().Add(within)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, ok, err := p.ping(ctx, wait)
		if err != nil || ok {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
	}
}

// series runs n pings, each waiting up to timeout: the round trips'
// percentiles and how many were lost.
func (p *pinger) series(ctx context.Context, n int, timeout time.Duration) (outcome, error) {
	h := newHist()
	lost := 0
	for range n {
		rtt, ok, err := p.ping(ctx, timeout)
		if err != nil {
			return outcome{}, err
		}
		if !ok {
			lost++
			continue
		}
		_ = h.RecordValue(max(rtt, 1))
	}
	if h.TotalCount() == 0 {
		return outcome{}, fmt.Errorf("all %d pings lost", n)
	}
	m := percentiles(h)
	m["lost"] = float64(lost)
	return outcome{metrics: m, hist: h}, nil
}
