package multicast

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestSpinFindsDatagrams: a subscriber with Config.Spin, waiting in
// Receive for messages published 20 ms apart, finds them polling its
// socket (SpinHits), and gets every one, in order.
func TestSpinFindsDatagrams(t *testing.T) {
	cfg := testConfig(t)
	cfg.Spin = time.Second
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	const n = 10
	go func() {
		for i := range n {
			time.Sleep(20 * time.Millisecond)
			if err := p.Publish(context.Background(), transport.Message{Payload: indexed(i, 16)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for want := uint64(1); want <= n; {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for message %d: %v", want, err)
		}
		if ev.Kind != transport.EventMessage {
			continue
		}
		if ev.Message.Seq != want {
			t.Fatalf("message %d, want %d", ev.Message.Seq, want)
		}
		want++
	}
	if st := s.Stats(); st.SpinHits == 0 || st.SpinReads < st.SpinHits {
		t.Fatalf("spinning found no datagram: %d spin reads, %d hits, %d reads", st.SpinReads, st.SpinHits, st.Reads)
	}
}

// TestSpinHonoursContext: a Receive spinning on a silent socket returns
// when its context ends, not when Spin (1 s) has passed.
func TestSpinHonoursContext(t *testing.T) {
	cfg := testConfig(t)
	cfg.Spin = time.Second
	s := mustSub(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	for {
		_, err := s.Receive(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 800*time.Millisecond {
		t.Fatalf("Receive returned %v after its context ended", took-30*time.Millisecond)
	}
	if st := s.Stats(); st.SpinReads == 0 {
		t.Fatalf("Receive did not spin: %+v", st)
	}
}
