package kafka

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestLog reads a topic at positions: its streams and bounds, a read
// from the start that streams on, reads that seek back and forward, a
// position found by time, another partition, and a read at the end that
// waits for the next record.
func TestLog(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "lt", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.UnixMilli(1_700_000_000_000)
	var rs []*kgo.Record
	for i := range 100 {
		rs = append(rs, &kgo.Record{Topic: "lt", Partition: 0, Value: fmt.Appendf(nil, "v%d", i),
			Timestamp: base.Add(time.Duration(i) * time.Second),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}}})
	}
	produce(t, cl, rs...)
	produce(t, cl, &kgo.Record{Topic: "lt", Partition: 1, Value: []byte("other")})

	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	log, err := OpenLog(ctx, parse(t, "logd://"+addr+"/lt"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	streams, err := log.Streams(ctx)
	if err != nil || len(streams) != 2 {
		t.Fatalf("streams %v, %v: want the two partitions", streams, err)
	}
	p0 := transport.StreamID{Topic: "lt", Partition: 0}
	first, next, err := log.Bounds(ctx, p0)
	if err != nil || first != 0 || next != 100 {
		t.Fatalf("bounds %d, %d, %v: want 0, 100", first, next, err)
	}
	// readAll reads from pos until want records came, checking each.
	readAll := func(pos uint64, want int) {
		t.Helper()
		got := 0
		for got < want {
			ms, err := log.Read(ctx, p0, pos)
			if err != nil {
				t.Fatalf("read at %d: %v", pos, err)
			}
			for _, m := range ms {
				if m.Seq != pos || string(m.Payload) != fmt.Sprintf("v%d", pos) || m.Stream != p0 ||
					len(m.Headers) != 1 || string(m.Headers[0].Value) != fmt.Sprint(pos) {
					t.Fatalf("record %+v, want offset %d", m, pos)
				}
				pos++
				got++
			}
		}
	}
	readAll(0, 100)
	readAll(40, 10) // back
	readAll(90, 5)  // forward
	readAll(7, 1)
	// ReadEach hands the same records, one at a time, from where asked.
	for _, from := range []uint64{0, 60} {
		for pos := from; pos < 100; {
			n, err := log.ReadEach(ctx, p0, pos, func(m *transport.Message) {
				if m.Seq != pos || string(m.Payload) != fmt.Sprintf("v%d", pos) || m.Stream != p0 ||
					len(m.Headers) != 1 || string(m.Headers[0].Value) != fmt.Sprint(pos) {
					t.Fatalf("ReadEach from %d: record %+v, want offset %d", from, m, pos)
				}
				pos++
			})
			if err != nil || n == 0 {
				t.Fatalf("ReadEach at %d: %d records, %v", pos, n, err)
			}
		}
	}
	at, err := log.PositionAt(ctx, p0, base.Add(42*time.Second))
	if err != nil || at != 42 {
		t.Fatalf("position at +42s: %d, %v: want 42", at, err)
	}
	if at, err = log.PositionAt(ctx, p0, base.Add(time.Hour)); err != nil || at != 100 {
		t.Fatalf("position after the last record: %d, %v: want the end, 100", at, err)
	}
	p1 := transport.StreamID{Topic: "lt", Partition: 1}
	if ms, err := log.Read(ctx, p1, 0); err != nil || len(ms) != 1 || string(ms[0].Payload) != "other" || ms[0].Stream != p1 {
		t.Fatalf("partition 1: %+v, %v", ms, err)
	}
	// At the end, a Read waits for the next record.
	got := make(chan []transport.Message, 1)
	go func() {
		ms, err := log.Read(ctx, p0, 100)
		if err != nil {
			t.Error(err)
		}
		got <- ms
	}()
	produce(t, cl, &kgo.Record{Topic: "lt", Partition: 0, Value: []byte("v100"), Headers: []kgo.RecordHeader{{Key: "i", Value: []byte("100")}}})
	if ms := <-got; len(ms) != 1 || ms[0].Seq != 100 {
		t.Fatalf("read at the end: %+v, want the record appended, at 100", ms)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if ms, err := log.Read(short, p0, 101); err == nil {
		t.Fatalf("read past the end returned %+v, want the context's end", ms)
	}
	if _, err := log.Read(ctx, transport.StreamID{Topic: "other"}, 0); err == nil {
		t.Fatal("read of another topic's stream: no error")
	}
}

// TestLogFetchBounded: one Read brings at most LogFetchBytes of records
// (here 64 KiB: four records of 16 KiB, each in a batch of its own),
// however much the partition holds past the position; the default bound
// is Kafka's per-partition one, not kgo's 50 MiB.
func TestLogFetchBounded(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "lb", 1)
	cl := newClient(t, addr)
	value := make([]byte, 16<<10)
	rand.NewChaCha8([32]byte{1}).Read(value) // not compressible: the bound is on the wire's bytes
	for range 40 {
		produce(t, cl, &kgo.Record{Topic: "lb", Value: value})
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cfg := parse(t, "logd://"+addr+"/lb")
	cfg.LogFetchBytes = 64 << 10
	log, err := OpenLog(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p0 := transport.StreamID{Topic: "lb"}
	for pos, reads := uint64(0), 0; pos < 40; reads++ {
		ms, err := log.Read(ctx, p0, pos)
		if err != nil {
			t.Fatal(err)
		}
		bytes := 0
		for _, m := range ms {
			bytes += len(m.Payload)
		}
		if bytes > 64<<10 {
			t.Fatalf("read %d at %d: %d records, %d bytes: want at most 64 KiB", reads, pos, len(ms), bytes)
		}
		pos = ms[len(ms)-1].Seq + 1
	}
	cfg.LogFetchBytes = -1
	if _, err := OpenLog(ctx, cfg); !errors.Is(err, ErrBadConfig) {
		t.Errorf("LogFetchBytes -1: %v, want a ConfigError", err)
	}
}
