package main

import (
	"bufio"
	"io"
	"sync"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// sink is where mcast sub puts the messages it receives.
type sink interface {
	// message takes one message, received at now. An error stops the
	// subscriber.
	message(m *transport.Message, now time.Time) error
	// gap counts a gap.
	gap(g *transport.Gap)
	// flush writes out what is buffered, before a line on standard
	// error, so the two streams read in order on a terminal.
	flush() error
	// close stops the sink's goroutine and flushes.
	close() error
}

// lineFlush is how long a received line may wait in the buffer.
const lineFlush = 50 * time.Millisecond

// lineSink prints each message as a line (see appendLine), buffered and
// flushed every lineFlush by its own goroutine.
type lineSink struct {
	mu   sync.Mutex
	w    *bufio.Writer
	line []byte
	stop chan struct{}
	done chan struct{}
}

func newLineSink(w io.Writer) *lineSink {
	s := &lineSink{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go s.flushLoop()
	return s
}

func (s *lineSink) flushLoop() {
	defer close(s.done)
	t := time.NewTicker(lineFlush)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.flush() // a write error also fails the next message
		}
	}
}

func (s *lineSink) message(m *transport.Message, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.line = appendLine(s.line[:0], m)
	_, err := s.w.Write(s.line)
	return err
}

func (s *lineSink) gap(*transport.Gap) {}

func (s *lineSink) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Flush()
}

func (s *lineSink) close() error {
	close(s.stop)
	<-s.done
	return s.flush()
}

// statsSink counts messages and their latency, and prints a statsLine
// every interval from its own goroutine.
type statsSink struct {
	out      io.Writer
	mcast    func() multicast.SubscriberStats // nil but for a multicast subscriber
	interval time.Duration

	mu         sync.Mutex
	lat        *latency.Histogram // since the last line
	delivered  uint64
	gaps, lost uint64

	stop chan struct{}
	done chan struct{}
}

// newStatsSink returns a statsSink; mcast, when not nil, reads a
// multicast subscriber's counters.
func newStatsSink(out io.Writer, interval time.Duration, mcast func() multicast.SubscriberStats) *statsSink {
	s := &statsSink{
		out: out, mcast: mcast, interval: interval, lat: latency.New(),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go s.printLoop()
	return s
}

func (s *statsSink) message(m *transport.Message, now time.Time) error {
	s.mu.Lock()
	s.lat.Record(now.Sub(m.Time))
	s.delivered++
	s.mu.Unlock()
	return nil
}

func (s *statsSink) gap(g *transport.Gap) {
	s.mu.Lock()
	s.gaps++
	if g.Lost() {
		s.lost += g.Len()
	}
	s.mu.Unlock()
}

func (s *statsSink) printLoop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	last, prev := time.Now(), uint64(0)
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			sample := s.sample(now, now.Sub(last), prev)
			last, prev = now, sample.delivered
			_, _ = io.WriteString(s.out, statsLine(sample))
		}
	}
}

// sample reads the counters and starts a new latency interval.
func (s *statsSink) sample(now time.Time, interval time.Duration, prev uint64) statsSample {
	s.mu.Lock()
	sample := statsSample{
		at: now, interval: interval, delivered: s.delivered, fresh: s.delivered - prev,
		gaps: s.gaps, lost: s.lost, p50: s.lat.Quantile(0.5), p99: s.lat.Quantile(0.99),
	}
	s.lat.Reset()
	s.mu.Unlock()
	if s.mcast != nil {
		st := s.mcast()
		sample.mcast = &st
	}
	return sample
}

func (s *statsSink) flush() error { return nil }

func (s *statsSink) close() error {
	close(s.stop)
	<-s.done
	return nil
}
