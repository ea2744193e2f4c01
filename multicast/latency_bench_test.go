package multicast

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// BenchmarkLatency measures one-way latency at a fixed open-loop rate
// through the transport and through raw UDP multicast, in the same run.
// Each message is stamped with the time it was scheduled to be sent, not
// the time it was sent, so a stall delays the messages behind it and
// shows in the tail (no coordinated omission). b.N is the number of
// messages per side.
//
//	go test -run XXX -bench Latency -benchtime 20000x ./multicast/
func BenchmarkLatency(b *testing.B) {
	const rate = 10_000
	raw := rawLatency(b, b.N, rate)
	ours := transportLatency(b, b.N, rate)
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}, {"p99.9", 0.999}} {
		b.ReportMetric(float64(ours.Quantile(q.q).Microseconds()), q.name+"-µs")
		b.ReportMetric(float64(raw.Quantile(q.q).Microseconds()), "raw-"+q.name+"-µs")
	}
	b.ReportMetric(float64(ours.Quantile(0.99))/float64(raw.Quantile(0.99)), "p99-x-raw")
}

// schedule calls send for message i at start + i/rate, catching up on
// every message due when it wakes late. Timers here round sleeps up to a
// millisecond, so the last stretch before each message is spent
// spinning on the clock: the sender keeps one core, the receivers have
// the other.
func schedule(n, rate int, send func(i int, due time.Time)) {
	start := time.Now()
	period := time.Second / time.Duration(rate)
	for i := 0; i < n; {
		now := time.Now()
		for ; i < n; i++ {
			due := start.Add(time.Duration(i) * period)
			if wait := due.Sub(now); wait > 0 {
				if wait > 2*time.Millisecond {
					time.Sleep(wait - 2*time.Millisecond)
				}
				break
			}
			send(i, due)
		}
	}
}

func transportLatency(b *testing.B, n, rate int) *latency.Histogram {
	cfg := testConfig(b)
	s := mustSub(b, cfg)
	p := mustPub(b, cfg)
	ctx := context.Background()
	payload := make([]byte, benchPayload)
	go schedule(n, rate, func(_ int, due time.Time) {
		_ = p.Publish(ctx, transport.Message{Time: due, Payload: payload})
	})
	h := latency.New()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for int(h.Count()) < n {
		ev, err := s.Receive(rctx)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Kind == transport.EventMessage {
			h.Record(time.Since(ev.Message.Time))
		}
	}
	return h
}

func rawLatency(b *testing.B, n, rate int) *latency.Histogram {
	cfg, rc, sc := rawPair(b)
	go schedule(n, rate, func(_ int, due time.Time) {
		var buf [benchPayload]byte
		binary.BigEndian.PutUint64(buf[:], uint64(due.UnixNano()))
		_, _ = sc.WriteToUDPAddrPort(buf[:], cfg.Group)
	})
	h := latency.New()
	buf := make([]byte, 2048)
	_ = rc.SetReadDeadline(time.Now().Add(time.Minute))
	for int(h.Count()) < n {
		k, _, err := rc.ReadFromUDPAddrPort(buf)
		if err != nil {
			b.Fatal(err)
		}
		if k == benchPayload {
			h.Record(time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(buf)))))
		}
	}
	return h
}
