package transporttest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// testPair is a Pair under test. It closes, at cleanup, every publisher
// and the subscriber the test has not closed itself.
type testPair struct {
	Pair
	t *testing.T
	// sem is what the subscriber claims.
	sem transport.Semantics
	// pub is Pair.Pub; pubs also has every restarted publisher.
	pub       *publisher
	pubs      []*publisher
	subClosed bool
}

// publisher is a publisher of the pair and whether the test closed it.
type publisher struct {
	transport.Publisher
	closed bool
}

// newPair makes a pair with faults f, skipping the test when the harness
// cannot inject them.
func newPair(t *testing.T, h Harness, f Faults) *testPair {
	t.Helper()
	p, err := tryPair(t, h, f)
	if errors.Is(err, ErrFaultsUnsupported) {
		t.Skipf("harness cannot inject %+v: %v", f, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryPair makes a pair with faults f, or returns why not.
func tryPair(t *testing.T, h Harness, f Faults) (*testPair, error) {
	t.Helper()
	p, err := h.NewPair(t, f)
	if err != nil {
		return nil, fmt.Errorf("NewPair(%+v): %w", f, err)
	}
	if p.Pub == nil || p.Sub == nil {
		return nil, fmt.Errorf("%w: NewPair returned a nil publisher or subscriber", ErrBadHarness)
	}
	tp := &testPair{Pair: p, t: t, sem: p.Sub.Semantics(), pub: &publisher{Publisher: p.Pub}}
	tp.pubs = append(tp.pubs, tp.pub)
	t.Cleanup(tp.cleanup)
	return tp, nil
}

// newPublisher restarts the publisher through Pair.NewPublisher.
func (p *testPair) newPublisher() *publisher {
	p.t.Helper()
	pub, err := p.NewPublisher()
	if err != nil {
		p.t.Fatalf("NewPublisher: %v", err)
	}
	if pub == nil {
		p.t.Fatalf("%v: NewPublisher returned a nil publisher", ErrBadHarness)
	}
	h := &publisher{Publisher: pub}
	p.pubs = append(p.pubs, h)
	return h
}

// openSubscriber opens another subscriber with open (Pair.NewSubscriber
// or Pair.NewGroupMember, named what), which must also offer
// acknowledgements exactly when it claims AtLeastOnce. The test closes
// it at cleanup, before the pair.
func (p *testPair) openSubscriber(what string, open func() (transport.Subscriber, error)) transport.Subscriber {
	p.t.Helper()
	sub, err := open()
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
	if sub == nil {
		p.t.Fatalf("%v: %s returned a nil subscriber", ErrBadHarness, what)
	}
	p.t.Cleanup(func() {
		if err := within(prompt, sub.Close); err != nil {
			p.t.Errorf("Close of the subscriber %s opened: %v", what, err)
		}
	})
	if bad := ackClaim(sub); bad != "" {
		p.t.Errorf("the subscriber %s opened %s", what, bad)
	}
	return sub
}

// closePub closes pub, which must return nil without blocking for long.
func (p *testPair) closePub(pub *publisher) {
	p.t.Helper()
	pub.closed = true
	if err := within(receiveDeadline, pub.Close); err != nil {
		p.t.Errorf("Publisher.Close: %v", err)
	}
}

// closeSub closes the subscriber, which must return nil promptly.
func (p *testPair) closeSub() {
	p.t.Helper()
	p.subClosed = true
	if err := within(prompt, p.Sub.Close); err != nil {
		p.t.Errorf("Subscriber.Close: %v", err)
	}
}

func (p *testPair) cleanup() {
	for _, pub := range p.pubs {
		if !pub.closed {
			p.closePub(pub)
		}
	}
	if !p.subClosed {
		p.closeSub()
	}
}

// Errors of within.
var (
	errStillBlocked = errors.New("still blocked")
	errPanicked     = errors.New("panicked")
)

// within calls f in another goroutine and returns its result, an error
// wrapping errStillBlocked if it takes longer than d, or one wrapping
// errPanicked if it panics. A call that is still blocked is left running: the test has
// failed, and cleanup closing the pair should release it.
func within(d time.Duration, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				errc <- fmt.Errorf("%w: %v", errPanicked, v)
			}
		}()
		errc <- f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-errc:
		return err
	case <-timer.C:
		return fmt.Errorf("%w after %v", errStillBlocked, d)
	}
}
