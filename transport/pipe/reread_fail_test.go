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
	srcP0 := transport.StreamID{Topic: "src", Partition: 0}
	srcP1 := transport.StreamID{Topic: "src", Partition: 1}
	d := &dest{}
	d.holding(srcP0, 0, 9)
	given := map[transport.StreamID][]uint64{}
	src := newAckingSource(400, d.holds(given))
	for pos := uint64(10); pos <= 19; pos++ {
		given[srcP0] = append(given[srcP0], pos)
	}
	for pos := uint64(151); pos <= 210; pos++ {
		given[srcP1] = append(given[srcP1], pos)
	}
	send := func(s transport.StreamID, from, to uint64) {
		src.events <- *startEv(s, from)
		for pos := from; pos <= to; pos++ {
			src.events <- *msg(s, pos)
		}
	}
	tr := &flakyTail{d: d}
	p, err := New(src, plainDest{d}, Config{Tail: tr})
	if err != nil {
		t.Fatal(err)
	}
	tail, _ := d.Tail(context.Background(), DefaultTailRecords)
	if _, err := p.Resume(tail); err != nil {
		t.Fatal(err)
	}
	send(srcP0, 10, 19)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runPipe(ctx, p)
	waitAcked(t, src, srcP0, 19)

	d.mu.Lock()
	d.holding(srcP1, 101, 200) // by the partition's previous owner
	d.mu.Unlock()
	tr.mu.Lock()
	tr.fails = 1 // the read for partition 1
	tr.mu.Unlock()
	send(srcP1, 151, 210)
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the source had more to forward", err)
	default:
	}
	waitAcked(t, src, srcP1, 210)
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	if len(src.errs) > 0 {
		t.Errorf("acknowledgements: %v", src.errs)
	}
	src.mu.Unlock()
	if st := p.Stats(); st.RereadsFailed != 1 || st.Forwarded != 10+60 {
		t.Errorf("rereads failed %d, forwarded %d: want 1 and 70", st.RereadsFailed, st.Forwarded)
	}
}
