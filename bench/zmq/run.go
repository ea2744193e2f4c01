package zmqbench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// recvTimeout is how long a receiver waits for the next message before
// it counts the rest as lost.
const recvTimeout = 5 * time.Second

// warm sends probes until one arrives, so that the subscription is in
// place (a PUB drops what it sends before), then drains what follows.
func warm(p pair) error {
	probe := make([]byte, PayloadSize)
	for range 1000 {
		if err := p.send(probe); err != nil {
			return err
		}
		if err := p.flush(); err != nil {
			return err
		}
		if _, err := p.recv(10 * time.Millisecond); err == nil {
			for {
				if _, err := p.recv(50 * time.Millisecond); err != nil {
					return nil
				}
			}
		} else if !errors.Is(err, errTimeout) {
			return err
		}
	}
	return errors.New("no probe arrived in 1000 tries")
}

// rateResult is what a rate run measured.
type rateResult struct {
	rate float64 // messages received per second, from the first send to the last receipt
	lost int     // messages that did not arrive
}

// rateRun sends n messages as fast as the sender takes them and receives
// them on another goroutine.
func rateRun(p pair, n int) (rateResult, error) {
	if err := warm(p); err != nil {
		return rateResult{}, err
	}
	sent := make(chan error, 1)
	start := time.Now()
	go func() {
		payload := make([]byte, PayloadSize)
		for i := range n {
			binary.BigEndian.PutUint64(payload, uint64(i))
			if err := p.send(payload); err != nil {
				sent <- err
				return
			}
		}
		sent <- p.flush()
	}()
	got := 0
	var last time.Time
	for got < n {
		if _, err := p.recv(recvTimeout); err != nil {
			if !errors.Is(err, errTimeout) {
				return rateResult{}, err
			}
			break
		}
		got++
		last = time.Now()
	}
	if err := <-sent; err != nil {
		return rateResult{}, err
	}
	if got == 0 {
		return rateResult{lost: n}, nil
	}
	return rateResult{rate: float64(got) / last.Sub(start).Seconds(), lost: n - got}, nil
}

// latencyResult is what a latency run measured.
type latencyResult struct {
	p50, p99 time.Duration
	lost     int
}

// latencyRun sends n messages on an open-loop schedule of rate a
// second (a late send is made up for, never skipped: the sender waits
// for nobody), each carrying the time it was sent; the receiver takes
// the difference at arrival.
func latencyRun(p pair, n int, rate float64) (latencyResult, error) {
	if err := warm(p); err != nil {
		return latencyResult{}, err
	}
	base := time.Now()
	sent := make(chan error, 1)
	go func() {
		payload := make([]byte, PayloadSize)
		for i := range n {
			if d := time.Duration(float64(i)/rate*1e9) - time.Since(base); d > 0 {
				time.Sleep(d) // the schedule, not a wait for an event
			}
			binary.BigEndian.PutUint64(payload, uint64(time.Since(base)))
			if err := p.send(payload); err != nil {
				sent <- err
				return
			}
		}
		sent <- p.flush()
	}()
	lat := make([]time.Duration, 0, n)
	for len(lat) < n {
		m, err := p.recv(recvTimeout)
		if err != nil {
			if !errors.Is(err, errTimeout) {
				return latencyResult{}, err
			}
			break
		}
		lat = append(lat, time.Since(base)-time.Duration(binary.BigEndian.Uint64(m)))
	}
	if err := <-sent; err != nil {
		return latencyResult{}, err
	}
	if len(lat) == 0 {
		return latencyResult{lost: n}, nil
	}
	slices.Sort(lat)
	return latencyResult{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], lost: n - len(lat)}, nil
}

// measure opens a pair of c, runs f on it and closes it.
func measure[R any](c contender, queue int, latency bool, f func(pair) (R, error)) (R, error) {
	p, err := c.open(queue, latency)
	if err != nil {
		var zero R
		return zero, fmt.Errorf("%s: %w", c.name, err)
	}
	defer p.close()
	r, err := f(p)
	if err != nil {
		return r, fmt.Errorf("%s: %w", c.name, err)
	}
	return r, nil
}
