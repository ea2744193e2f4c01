package kafka

import (
	"context"
	"sync"
)

// ackGate orders a GroupSubscriber's Acks with Close's commit. An Ack
// under way when Close begins is waited for, bounded by the commit's
// deadline, so that the commit carries its mark; one that begins after
// finds the subscriber closed (ErrClosed); one that ends after Close's
// commit read the marks — Close stopped waiting for it — reports that
// its mark may not be committed (ErrClosed too), instead of nil.
type ackGate struct {
	mu       sync.Mutex
	inFlight int
	// idle, when Close waits, is closed once inFlight is back to 0.
	idle chan struct{}
	// read: Close's commit is reading the marks.
	read bool
}

// enter admits an Ack, unless closed is closed. Each admitted Ack
// leaves.
func (a *ackGate) enter(closed <-chan struct{}) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-closed:
		return false
	default:
	}
	a.inFlight++
	return true
}

// leave ends an Ack, and reports whether Close's commit may have read
// the marks before it.
func (a *ackGate) leave() (late bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	if a.inFlight == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
	return a.read
}

// drain, called by Close once closed is closed (no Ack enters since),
// waits until the Acks admitted have left or ctx ends, and marks the
// marks read.
func (a *ackGate) drain(ctx context.Context) {
	a.mu.Lock()
	var idle chan struct{}
	if a.inFlight > 0 {
		idle = make(chan struct{})
		a.idle = idle
	}
	a.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	a.mu.Lock()
	a.read = true
	a.mu.Unlock()
}
