package pipe

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// flakyTail is a destination's TailReader whose next fails reads fail,
// as a read does while the destination's leader moves.
type flakyTail struct {
	d     *dest
	mu    sync.Mutex
	fails int
	calls int
}

func (f *flakyTail) Tail(ctx context.Context, n int) ([]transport.Message, error) {
	f.mu.Lock()
	f.calls++
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return nil, errors.New("not the leader")
	}
	return f.d.Tail(ctx, n)
}

// TestPipeGoesOnWhenRereadFails: a member of a consumer group is given
// partition 1 mid-run and the destination's tail, read again for it
// (Config.Tail), fails once. The pipe goes on, as it would without
// Config.Tail: what the partition's previous owner wrote and had not
// committed is written again (at least once), not the pipe failed;
// the failed read is counted.
func TestPipeGoesOnWhenRereadFails(t *testing.T) {
	d := &dest{}
	tr := &flakyTail{d: d}
	p := midRunAssignment(t, d, tr, func() {
		tr.mu.Lock()
		tr.fails = 1 // the read for partition 1
		tr.mu.Unlock()
	})
	if st := p.Stats(); st.RereadsFailed != 1 || st.Forwarded != 10+60 {
		t.Errorf("rereads failed %d, forwarded %d: want 1 and 70", st.RereadsFailed, st.Forwarded)
	}
}

// hangingTail is a destination's TailReader whose reads, once hang is
// set, answer only when their context ends: a destination that takes
// the connection and does not answer.
type hangingTail struct {
	d    *dest
	hang atomic.Bool
}

func (h *hangingTail) Tail(ctx context.Context, n int) ([]transport.Message, error) {
	if h.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.d.Tail(ctx, n)
}

// TestPipeBoundsAHangingReread: the destination's tail, read again for
// partition 1 given mid-run, does not answer. The read is given up
// after Config.RereadTimeout and counted as failed, and the stream
// resumes from what was read before, as for a read that fails:
// forwarding is held up that long, not until the client's own request
// timeouts.
func TestPipeBoundsAHangingReread(t *testing.T) {
	d := &dest{}
	h := &hangingTail{d: d}
	p := midRunAssignmentConfig(t, d, Config{Tail: h, RereadTimeout: 50 * time.Millisecond}, func() { h.hang.Store(true) })
	if st := p.Stats(); st.RereadsFailed != 1 || st.Forwarded != 10+60 {
		t.Errorf("rereads failed %d, forwarded %d: want 1 and 70", st.RereadsFailed, st.Forwarded)
	}
}

// TestRereadTimeoutValidated: a negative RereadTimeout is refused, 0
// takes the default.
func TestRereadTimeoutValidated(t *testing.T) {
	_, err := New(newSource(1), &dest{}, Config{RereadTimeout: -time.Second})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "RereadTimeout" || ce.Want != "must be ≥ 0" {
		t.Errorf("New with RereadTimeout -1s: %v, want a ConfigError of RereadTimeout, ≥ 0 (0: the default)", err)
	}
	p, err := New(newSource(1), &dest{}, Config{})
	if err != nil || p.cfg.RereadTimeout != DefaultRereadTimeout {
		t.Errorf("New: %v, RereadTimeout %v: want the default %v", err, p.cfg.RereadTimeout, DefaultRereadTimeout)
	}
}
