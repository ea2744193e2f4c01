package kafka

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

func TestLogOldFormat(t *testing.T) {
	for name, data := range map[string][]byte{
		"one small message": messageSet(0, 10, "a"),
		"small messages":    messageSet(1, 10, "a", "b", "c", "d", "e"),
	} {
		t.Run(name, func(t *testing.T) {
			var asked atomic.Int64
			var most atomic.Int32
			log := fakeLog(t, &fakeBroker{}, 1<<20)
			log.send = func(_ context.Context, _ int32, _ int64, size int32) fetched {
				asked.Add(1)
				most.Store(max(most.Load(), size))
				return fetched{data: data, end: 100}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := log.ReadEach(ctx, transport.StreamID{Topic: "f"}, 10, func(*transport.Message) {})
			if !errors.Is(err, ErrCorruptBatch) || !strings.Contains(err.Error(), "magic") {
				t.Fatalf("%d records, %v: want ErrCorruptBatch naming the message format", n, err)
			}
			if asked.Load() > 2 || most.Load() > 1<<20 {
				t.Fatalf("%d fetches, the largest of %d bytes: want one of the fetch size", asked.Load(), most.Load())
			}
		})
	}
}
