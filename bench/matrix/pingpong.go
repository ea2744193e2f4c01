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
	type pong struct {
		seq uint64
		at  int64
	}
	ch := make(chan pong, 1024)
	go func() {
		defer wg.Done()
		errs[1] = back.Subs()[0].Run(rctx, func(p []byte) {
			if seq, at, ok := unstamp(p); ok {
				select {
				case ch <- pong{seq, at}:
				default:
				}
			}
		})
	}()
	defer func() { stop(); wg.Wait() }()

	buf := make([]byte, cell.Size)
	var seq uint64
	ping := func(timeout time.Duration) (int64, bool, error) {
		seq++
		stamp(buf, seq, now())
		if err := fwd.Send(buf); err != nil {
			return 0, false, err
		}
		if err := fwd.Flush(); err != nil {
			return 0, false, err
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		for {
			select {
			case p := <-ch:
				if p.seq == seq {
					return now() - p.at, true, nil
				}
			case <-t.C:
				return 0, false, nil
			case <-ctx.Done():
				return 0, false, ctx.Err()
			}
		}
	}
	// Ready: a ping came back, waiting twice as long each time (from
	// 20 ms up to a second: a slow transport, or a slow build such as
	// -race, answers later than the first pings wait).
	deadline := time.Now().Add(r.set.ReadyTimeout)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, ok, err := ping(wait)
		if err != nil {
			return outcome{}, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return outcome{}, errors.Join(fmt.Errorf("no ping came back in %v", r.set.ReadyTimeout), errs[0], errs[1])
		}
	}
	h := newHist()
	lost := 0
	for range r.set.PingPongs {
		rtt, ok, err := ping(r.set.PingTimeout)
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
		return outcome{}, fmt.Errorf("all %d pings lost", r.set.PingPongs)
	}
	m := percentiles(h)
	m["lost"] = float64(lost)
	return outcome{metrics: m, hist: h}, nil
}
