package matrix

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// session runs a Link's subscribers and counts, per probe, what each
// got of the messages the probe sent.
type session struct {
	link   Link
	cur    atomic.Pointer[probe]
	seq    uint64
	buf    []byte
	stop   context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	subErr error
}

// probe is one batch of messages, seq lo..hi-1.
type probe struct {
	lo, hi uint64
	got    []atomic.Int64
	last   atomic.Int64 // when a subscriber last got one of them
	hists  []*lockedHist
}

type lockedHist struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// newHist records nanoseconds from 100 ns to a minute, 3 significant
// digits (HdrHistogram's usual).
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(time.Minute), 3) }

func startSession(l Link, size int) *session {
	ctx, stop := context.WithCancel(context.Background())
	// Sequence numbers start high: a message a link sent by itself
	// (logd's first record, which makes its topic) is never counted.
	s := &session{link: l, stop: stop, buf: make([]byte, size), seq: 1 << 32}
	for i := range s.buf[StampSize:] {
		s.buf[StampSize+i] = byte(i)
	}
	for i, sub := range l.Subs() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			err := sub.Run(ctx, func(p []byte) { s.got(i, p) })
			if err != nil {
				s.errMu.Lock()
				s.subErr = fmt.Errorf("subscriber %d: %w", i, err)
				s.errMu.Unlock()
			}
		}()
	}
	return s
}

func (s *session) got(i int, p []byte) {
	pr := s.cur.Load()
	if pr == nil {
		return
	}
	seq, at, ok := unstamp(p)
	if !ok || seq < pr.lo || seq >= pr.hi {
		return
	}
	t := now()
	pr.got[i].Add(1)
	pr.last.Store(t)
	if pr.hists != nil {
		h := pr.hists[i]
		h.mu.Lock()
		_ = h.h.RecordValue(max(t-at, 1))
		h.mu.Unlock()
	}
}

func (s *session) err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.subErr
}

// close stops the subscribers, waits for them (a libzmq socket must not
// be closed while another thread uses it), then closes the link.
func (s *session) close() error {
	s.stop()
	s.wg.Wait()
	return s.link.Close()
}

// begin starts a probe of n messages.
func (s *session) begin(n int, record bool) *probe {
	pr := &probe{lo: s.seq, hi: s.seq + uint64(n), got: make([]atomic.Int64, len(s.link.Subs()))}
	if record {
		for range pr.got {
			pr.hists = append(pr.hists, &lockedHist{h: newHist()})
		}
	}
	s.cur.Store(pr)
	return pr
}

func (pr *probe) total() int64 {
	var t int64
	for i := range pr.got {
		t += pr.got[i].Load()
	}
	return t
}

func (pr *probe) all(n int64) bool {
	for i := range pr.got {
		if pr.got[i].Load() < n {
			return false
		}
	}
	return true
}

// hist merges the subscribers' histograms.
func (pr *probe) hist() *hdrhistogram.Histogram {
	h := newHist()
	for _, lh := range pr.hists {
		lh.mu.Lock()
		h.Merge(lh.h)
		lh.mu.Unlock()
	}
	return h
}

// ready sends a message every 5 ms until every subscriber got one: a
// subscriber that connects or subscribes asynchronously (ZeroMQ's slow
// joiner) is then in place before anything is measured.
func (s *session) ready(ctx context.Context, timeout time.Duration) error {
	pr := s.begin(int(timeout/(5*time.Millisecond))+1, false)
	deadline := time.Now().Add(timeout)
	for !pr.all(1) {
		if s.seq >= pr.hi || time.Now().After(deadline) {
			return fmt.Errorf("subscribers not receiving after %v", timeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.sendOne(now()); err != nil {
			return err
		}
		if err := s.link.Flush(); err != nil {
			return err
		}
		waitUntil(now() + int64(5*time.Millisecond))
	}
	s.seq = pr.hi
	return nil
}

func (s *session) sendOne(due int64) error {
	stamp(s.buf, s.seq, due)
	s.seq++
	return s.link.Send(s.buf)
}

// sendFor is sendUpTo with the pacer's oversleep excused.
func (s *session) sendFor(ctx context.Context, pr *probe, rate float64, lag time.Duration) (int, error) {
	_, sent, err := s.sendUpTo(ctx, pr, rate, true, lag)
	return sent, err
}

// sendUpTo sends the probe's messages at rate, each stamped with the time
// it was due, and returns how long the sending took (ns) and how many it
// sent (fewer when, with lag > 0, it fell more than lag behind its
// schedule and stopped). A message the
// publisher is late for because an earlier Send blocked stays due at its
// time (no coordinated omission). With excuse, the publisher's own
// oversleep (timer slack when it waited for a message's time) shifts the
// rest of the schedule instead: it is the pacer's, not the transport's.
func (s *session) sendUpTo(ctx context.Context, pr *probe, rate float64, excuse bool, lag time.Duration) (int64, int, error) {
	start := now()
	begin := start
	n := int(pr.hi - pr.lo)
	for i := range n {
		due := start + int64(float64(i)*1e9/rate)
		if lag > 0 && now()-due > int64(lag) {
			err := s.link.Flush()
			return now() - begin, i, err
		}
		if now() < due {
			if err := s.link.Flush(); err != nil {
				return 0, i, err
			}
			waitUntil(due)
			if late := now() - due; excuse && late > 0 {
				start += late
				due += late
			}
		}
		if i&1023 == 0 && ctx.Err() != nil {
			return 0, i, ctx.Err()
		}
		if err := s.sendOne(due); err != nil {
			return 0, i, err
		}
	}
	err := s.link.Flush()
	return now() - begin, n, err
}

// drain waits until every subscriber got n messages of pr, or nothing
// arrived for quiet, or limit passed.
func (s *session) drain(ctx context.Context, pr *probe, n int64, quiet, limit time.Duration) {
	end := time.Now().Add(limit)
	pr.last.CompareAndSwap(0, now())
	for !pr.all(n) && time.Now().Before(end) && ctx.Err() == nil {
		if time.Duration(now()-pr.last.Load()) > quiet {
			return
		}
		waitUntil(now() + int64(time.Millisecond))
	}
}

// waitUntil waits for the run's clock to reach t (the pacing of an
// open-loop publisher, not a wait for an event): sleeps while more than
// 60 µs away, then spins (a 2-core machine cannot spare a spinning core
// for long). It never spins with runtime.Gosched: a goroutine always
// runnable keeps the scheduler from polling the network, and the
// subscribers' reads would wait for sysmon (~10 ms).
func waitUntil(t int64) {
	for {
		d := time.Duration(t - now())
		if d <= 0 {
			return
		}
		if d > 60*time.Microsecond {
			time.Sleep(d - 40*time.Microsecond)
		}
	}
}
