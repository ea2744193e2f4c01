package pipe

import (
	"context"
	"errors"
	"sync"
	"testing"

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
