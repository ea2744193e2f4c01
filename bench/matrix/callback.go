package matrix

import (
	"context"
	"sync/atomic"
)

// callbackSub is a subscriber whose client calls back with each
// message (NATS, JetStream): Run hands the callback fn while it runs.
type callbackSub struct {
	fn      atomic.Pointer[func([]byte)]
	dropped func() uint64 // what the client reports it dropped, or nil
}

func (s *callbackSub) deliver(p []byte) {
	if fn := s.fn.Load(); fn != nil {
		(*fn)(p)
	}
}

func (s *callbackSub) Run(ctx context.Context, fn func([]byte)) error {
	s.fn.Store(&fn)
	<-ctx.Done()
	s.fn.Store(nil)
	return nil
}

func (s *callbackSub) Counts() Counts {
	if s.dropped == nil {
		return Counts{}
	}
	return Counts{Gaps: s.dropped()}
}
