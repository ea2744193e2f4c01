package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// TestLogNoProgressPaces: a broker that answers at once with nothing
// past the offset asked for (no bytes; batches that all end before it;
// a part of a batch too short to read), though its high watermark says
// there is more, is asked again at most about once per logMaxWait, as
// kgo's consumer backs off a fetch that makes no progress, not in a
// loop as fast as it answers.
func TestLogNoProgressPaces(t *testing.T) {
	for name, data := range map[string][]byte{
		"nothing":        nil,
		"batches before": plainBatch(0, 10).bytes(t),
		"a header cut":   plainBatch(10, 10).bytes(t)[:40],
	} {
		t.Run(name, func(t *testing.T) {
			var asked atomic.Int64
			log := fakeLog(t, &fakeBroker{}, 1<<20)
			log.send = func(context.Context, int32, int64, int32) fetched {
				asked.Add(1)
				return fetched{data: data, end: 100}
			}
			const wait = 500 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			n, err := log.ReadEach(ctx, transport.StreamID{Topic: "f"}, 10, func(*transport.Message) {})
			if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%d records, %v: want none, the context's deadline", n, err)
			}
			if most := int64(wait/logMaxWait) + 3; asked.Load() > most {
				t.Fatalf("%d fetches in %v: want about one per %v, %d at most", asked.Load(), wait, logMaxWait, most)
			}
		})
	}
}

// TestLogReadsMessageSets: a fetch that answers message sets of the
// formats before record batches is read, whatever the size of their
// messages: not waited on forever for records, nor fetched ever larger,
// up to 64 MiB, as a batch cut by the fetch size.
func TestLogReadsMessageSets(t *testing.T) {
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"one small message": {messageSet(0, 10, "a"), "[10]"},
		"small messages":    {messageSet(1, 10, "a", "b", "c", "d", "e"), "[10 11 12 13 14]"},
	} {
		t.Run(name, func(t *testing.T) {
			data := c.data
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
			var got []uint64
			n, err := log.ReadEach(ctx, transport.StreamID{Topic: "f"}, 10, func(m *transport.Message) { got = append(got, m.Seq) })
			if err != nil || n != len(got) || fmt.Sprint(got) != c.want {
				t.Fatalf("%v, %v: want %s", got, err, c.want)
			}
			if asked.Load() > 2 || most.Load() > 1<<20 {
				t.Fatalf("%d fetches, the largest of %d bytes: want one of the fetch size", asked.Load(), most.Load())
			}
		})
	}
}

// TestLogCloseEndsPrefetch: the request a Log sent ahead, in flight when
// the Log closes, ends with it: no goroutine is left waiting.
func TestLogCloseEndsPrefetch(t *testing.T) {
	f := &fakeBroker{end: 30, batches: [][]byte{plainBatch(0, 10).bytes(t), plainBatch(10, 20).bytes(t)}}
	log := fakeLog(t, f, int32(len(f.batches[0])))
	started, ended := make(chan struct{}), make(chan struct{})
	send := f.send
	log.send = func(ctx context.Context, p int32, off int64, size int32) fetched {
		if off == 10 { // the request sent ahead: answered when the Log closes
			close(started)
			<-ctx.Done()
			defer close(ended)
			return fetched{err: ctx.Err()}
		}
		return send(ctx, p, off, size)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if n, err := log.ReadEach(ctx, transport.StreamID{Topic: "f"}, 0, func(*transport.Message) {}); err != nil || n != 10 {
		t.Fatalf("read at 0: %d records, %v", n, err)
	}
	<-started
	// A read waiting for it ends with its context, the request staying.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := log.ReadEach(short, transport.StreamID{Topic: "f"}, 10, func(*transport.Message) {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read at 10, its context ending: %v", err)
	}
	log.stop() // Close, but for the client a fake Log has none of
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the request sent ahead still runs after the Log closed")
	}
	if _, err := log.ReadEach(ctx, transport.StreamID{Topic: "f"}, 10, func(*transport.Message) {}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("read after close: %v, want transport.ErrClosed", err)
	}
}

// TestFetchRequestVersions: with no topic ID (a broker whose metadata
// has none), the Fetch request is kept to version 12, which names the
// topic, as kgo's consumer does: from 13 on, a zero ID names no topic.
func TestFetchRequestVersions(t *testing.T) {
	if v := fetchRequest("t", leader{}, 0, 0, 1).MaxVersion(); v > 12 {
		t.Errorf("no topic ID: Fetch up to version %d, want 12 at most", v)
	}
	if v := fetchRequest("t", leader{topicID: [16]byte{1}}, 0, 0, 1).MaxVersion(); v < 13 {
		t.Errorf("a topic ID: Fetch up to version %d, want 13 or later", v)
	}
	// kgo adds a request's Timeout to its read timeout, as it adds a
	// *kmsg.FetchRequest's MaxWaitMillis.
	if r, ok := fetchRequest("t", leader{}, 0, 0, 1).(kmsg.TimeoutRequest); !ok || r.Timeout() != int32(logMaxWait/time.Millisecond) {
		t.Errorf("no topic ID: the request's timeout is not the broker's wait")
	}
}

// TestLogCorruptAfterRecords: the records of a fetch before a batch that
// cannot be read are the read's, without an error; the read from the
// bad batch on reports it. Read returned none of them, with the error,
// so that they could never be read.
func TestLogCorruptAfterRecords(t *testing.T) {
	bad := plainBatch(10, 10)
	bad.corruptCRC = true
	f := &fakeBroker{end: 20, batches: [][]byte{plainBatch(0, 10).bytes(t), bad.bytes(t)}}
	log := fakeLog(t, f, 1<<20)
	stream := transport.StreamID{Topic: "f"}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	ms, err := log.Read(ctx, stream, 0)
	if err != nil || len(ms) != 10 || ms[9].Seq != 9 {
		t.Fatalf("read at 0: %v, %v: want 0..9", offsets(ms), err)
	}
	if ms, err = log.Read(ctx, stream, 10); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("read at 10: %v, %v: want ErrCorruptBatch", offsets(ms), err)
	}
	// A record cut inside a batch: those before it are read first.
	cut := plainBatch(0, 5)
	cut.wrongCount, cut.trailing, cut.lastDelta = 6, []byte{9}, 5
	f = &fakeBroker{end: 6, batches: [][]byte{cut.bytes(t)}}
	log = fakeLog(t, f, 1<<20)
	n, err := log.ReadEach(ctx, stream, 0, func(*transport.Message) {})
	if err != nil || n != 5 {
		t.Fatalf("read of a batch with a bad 6th record: %d records, %v: want the 5 before it", n, err)
	}
	if n, err := log.ReadEach(ctx, stream, 5, func(*transport.Message) {}); !errors.Is(err, ErrCorruptBatch) || n != 0 {
		t.Fatalf("read at the bad record: %d records, %v: want ErrCorruptBatch", n, err)
	}
}

// FuzzLogFetch: whatever a broker answers (bytes cut at the size asked
// for, from the first batch that holds the offset on), a Log's read
// never panics, hands records in order from the offset asked for only,
// returns by its context's end, and does not ask the broker in a loop.
func FuzzLogFetch(f *testing.F) {
	var two []byte
	for _, tb := range []testBatch{plainBatch(0, 3), plainBatch(3, 2)} {
		two = append(two, tb.bytes(f)...)
	}
	f.Add(two, int64(5), uint64(0), int32(64))
	f.Add(two, int64(5), uint64(4), int32(1<<20))
	f.Add(messageSet(1, 0, "a", "b"), int64(2), uint64(0), int32(64))
	f.Add(two[:70], int64(5), uint64(0), int32(40))
	f.Fuzz(func(t *testing.T, data []byte, end int64, pos uint64, size int32) {
		if size <= 0 || pos > 1<<40 {
			return
		}
		var asked atomic.Int64
		log := fakeLog(t, &fakeBroker{}, size)
		log.send = func(_ context.Context, _ int32, _ int64, n int32) fetched {
			asked.Add(1)
			return fetched{data: data[:min(len(data), int(n))], end: end}
		}
		const wait = 20 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		next := pos
		done := make(chan struct{})
		go func() {
			defer close(done)
			n, err := log.ReadEach(ctx, transport.StreamID{Topic: "f"}, pos, func(m *transport.Message) {
				if m.Seq < next {
					t.Errorf("record at %d, after %d, read from %d", m.Seq, next, pos)
				}
				next = m.Seq + 1
			})
			if err != nil && n != 0 {
				t.Errorf("%d records with an error: %v", n, err)
			}
		}()
		select {
		case <-done:
		case <-time.After(testDeadline):
			t.Fatal("the read did not return after its context ended")
		}
		// Growing a cut first batch to 64 MiB takes at most 21 fetches
		// from 64 bytes; one more a logMaxWait.
		if n := asked.Load(); n > 24 {
			t.Fatalf("%d fetches in %v", n, wait)
		}
	})
}
