package pipe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// brokenBack is a destination's BackReader whose reads fail, or, with
// hang, answer only when their context ends.
type brokenBack struct{ hang bool }

func (b brokenBack) Before(ctx context.Context, _ transport.StreamID, _ uint64, _ int) ([]transport.Message, error) {
	if b.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("not the leader")
}

// TestPipeGoesOnWhenTheLookBackOfAStartFails: partition 1, given
// mid-run, was written by its previous owner before 2,000 records of
// partition 2, so the full read of the destination's tail at its start
// does not reach it and the pipe looks back (Config.Back), which fails
// or does not answer. The look-back is part of the start's read: bounded
// by RereadTimeout with it, counted as a read that failed, and the
// partition goes on from what was read (written again at worst), the
// pipe not failed nor held up.
func TestPipeGoesOnWhenTheLookBackOfAStartFails(t *testing.T) {
	srcP2 := transport.StreamID{Topic: "src", Partition: 2}
	for _, hang := range []bool{false, true} {
		t.Run(map[bool]string{false: "fails", true: "hangs"}[hang], func(t *testing.T) {
			d := &dest{}
			cfg := Config{Tail: d, Back: brokenBack{hang: hang}, RereadTimeout: 50 * time.Millisecond}
			p := midRunAssignmentConfig(t, d, cfg, func() {
				d.mu.Lock()
				d.holding(srcP2, 0, 1999) // grew past a tail: a full read
				d.mu.Unlock()
			})
			if st := p.Stats(); st.RereadsFailed != 1 || st.Forwarded != 10+60 || st.LookedBack != 0 {
				t.Errorf("rereads failed %d, forwarded %d, looked back %d: want 1, 70 and 0", st.RereadsFailed, st.Forwarded, st.LookedBack)
			}
		})
	}
}
