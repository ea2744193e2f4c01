package pipe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestPipeDrainsWhenTheSourceFails: a source that fails (a feed's
// subscriber closed under the pipe, a socket error) stops the pipe with
// its error, but what the pipe had received is still written: the
// destination is fine, and a source that cannot be acknowledged does not
// deliver it again.
func TestPipeDrainsWhenTheSourceFails(t *testing.T) {
	d := &dest{}
	src := newSource(16)
	for s := uint64(1); s <= 10; s++ {
		src.events <- *msg(feedA, s)
	}
	close(src.events) // Receive fails once they are taken
	p, _ := New(src, d, Config{})
	stop := make(chan struct{})
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			d.mu.Lock()
			n := d.published
			d.mu.Unlock()
			if n == 10 {
				d.accept(-1)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond): // polling a fake with no event to wait on
			}
		}
	}()
	err := waitRun(t, runPipe(context.Background(), p))
	close(stop)
	<-accepting
	if !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Run: %v, want the source's error", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.held) != 10 {
		t.Errorf("the destination held %d when Run returned, want the 10 received", len(d.held))
	}
}
