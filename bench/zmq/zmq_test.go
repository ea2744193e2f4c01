package zmqbench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	pebbe "github.com/pebbe/zmq4"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/zmq"
)

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkZmqPubSub: message rate and latency of each contender, in
// interleaved rounds (the order rotates each round), medians over the
// rounds and the ratios of the medians. Run it once (-benchtime 1x).
func BenchmarkZmqPubSub(b *testing.B) {
	rounds := benchEnv("BROKERLESS_ZMQ_ROUNDS", 5)
	n := benchEnv("BROKERLESS_ZMQ_MESSAGES", 200_000)
	latN := benchEnv("BROKERLESS_ZMQ_LATENCY_MESSAGES", 20_000)
	rate := float64(benchEnv("BROKERLESS_ZMQ_RATE", 20_000))
	cs := contenders(OursWireBytes)
	rates, ratios := map[string][]float64{}, map[string][]float64{}
	p50s, p99s := map[string][]float64{}, map[string][]float64{}
	for r := range rounds {
		line := fmt.Sprintf("round %d:", r+1)
		for i := range cs {
			c := cs[(r+i)%len(cs)]
			rr, err := measure(c, n, false, func(p pair) (rateResult, error) { return rateRun(p, n) })
			if err != nil {
				b.Fatal(err)
			}
			lr, err := measure(c, n, true, func(p pair) (latencyResult, error) { return latencyRun(p, latN, rate) })
			if err != nil {
				b.Fatal(err)
			}
			if rr.lost > 0 || lr.lost > 0 {
				b.Fatalf("%s lost %d of %d messages at full rate, %d of %d at %.0f/s", c.name, rr.lost, n, lr.lost, latN, rate)
			}
			rates[c.name] = append(rates[c.name], rr.rate)
			p50s[c.name] = append(p50s[c.name], float64(lr.p50.Microseconds()))
			p99s[c.name] = append(p99s[c.name], float64(lr.p99.Microseconds()))
			line += fmt.Sprintf(" %s %.0f msgs/s p50 %v p99 %v;", c.name, rr.rate, lr.p50.Round(time.Microsecond), lr.p99.Round(time.Microsecond))
		}
		b.Log(line)
		last := func(name string) float64 { return rates[name][len(rates[name])-1] }
		for _, name := range []string{"brokerless", "brokerless-pack"} {
			ratios[name+"/libzmq"] = append(ratios[name+"/libzmq"], last(name)/last("libzmq"))
			ratios[name+"/raw-tcp"] = append(ratios[name+"/raw-tcp"], last(name)/last("raw-tcp"))
		}
		ratios["libzmq/raw-tcp"] = append(ratios["libzmq/raw-tcp"], last("libzmq")/last("raw-tcp"))
	}
	for _, c := range cs {
		b.ReportMetric(median(rates[c.name]), c.name+"-msgs/s")
		b.ReportMetric(median(p50s[c.name]), c.name+"-p50-µs")
		b.ReportMetric(median(p99s[c.name]), c.name+"-p99-µs")
	}
	// Ratios are medians of the ratios within each round, whose
	// contenders ran seconds apart: a load that changes between rounds
	// weighs on both sides of a ratio.
	for _, name := range slices.Sorted(maps.Keys(ratios)) {
		b.ReportMetric(median(ratios[name]), name)
		b.Logf("%s: median %.2f, rounds %.2f", name, median(ratios[name]), ratios[name])
	}
	b.ReportMetric(0, "ns/op")
}

// TestContendersDeliver: each contender delivers every message intact,
// at full rate and on the latency schedule.
func TestContendersDeliver(t *testing.T) {
	for _, c := range contenders(OursWireBytes) {
		rr, err := measure(c, 5000, false, func(p pair) (rateResult, error) { return rateRun(p, 5000) })
		if err != nil || rr.lost != 0 || rr.rate <= 0 {
			t.Errorf("%s, full rate: %+v %v", c.name, rr, err)
		}
		lr, err := measure(c, 5000, true, func(p pair) (latencyResult, error) { return latencyRun(p, 500, 5000) })
		if err != nil || lr.lost != 0 || lr.p50 <= 0 || lr.p99 < lr.p50 {
			t.Errorf("%s, latency: %+v %v", c.name, lr, err)
		}
	}
}

// relay forwards one TCP connection from its listener to target and
// counts the bytes that flow from target (the publisher) to the client.
func relay(t *testing.T, target string) (addr string, fromTarget *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	fromTarget = new(atomic.Int64)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		u, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer u.Close()
		go io.Copy(u, c)
		buf := make([]byte, 64<<10)
		for {
			n, err := u.Read(buf)
			fromTarget.Add(int64(n))
			if _, werr := c.Write(buf[:n]); err != nil || werr != nil {
				return
			}
		}
	}()
	return l.Addr().String(), fromTarget
}

// bytesPerMessage checks that n messages cost want bytes each on the
// wire, give or take the handshake.
func bytesPerMessage(t *testing.T, name string, total int64, n, want int) {
	t.Helper()
	per := float64(total) / float64(n)
	if per < float64(want) || per > float64(want)+0.1 {
		t.Errorf("%s: %d bytes for %d messages, %.2f each; raw TCP is set to move %d", name, total, n, per, want)
	}
}

// TestRawMovesTheSameBytes: raw TCP writes, per message, what
// transport/zmq writes for it unpacked (OursWireBytes), and libzmq
// writes LibzmqWireBytes, as counted by a relay on the way.
func TestRawMovesTheSameBytes(t *testing.T) {
	const n = 5000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := zmq.NewPublisher(ctx, zmq.Config{Bind: []string{"tcp://127.0.0.1:0"}, Heartbeat: -1, SubscriberQueue: n})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	addr, counted := relay(t, pub.Addrs()[0].String())
	sub, err := zmq.NewSubscriber(ctx, zmq.Config{Connect: []string{"tcp://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := pub.WaitSubscribers(ctx, Topic, 1); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, PayloadSize)
	for range n {
		if err := pub.Publish(ctx, transport.Message{Topic: Topic, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < n; {
		ev, err := sub.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == transport.EventMessage {
			got++
		}
	}
	bytesPerMessage(t, "transport/zmq", counted.Load(), n, OursWireBytes)

	zctx, err := pebbe.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer zctx.Term()
	zpub, _ := zctx.NewSocket(pebbe.PUB)
	defer zpub.Close()
	zsub, _ := zctx.NewSocket(pebbe.SUB)
	defer zsub.Close()
	zpub.SetLinger(0)
	zsub.SetLinger(0)
	zpub.SetSndhwm(0) // no limit: nothing dropped
	zsub.SetRcvhwm(0)
	zpub.Bind("tcp://127.0.0.1:*")
	ep, _ := zpub.GetLastEndpoint()
	zaddr, zcounted := relay(t, ep[len("tcp://"):])
	zsub.SetSubscribe(Topic)
	zsub.SetRcvtimeo(10 * time.Millisecond)
	if err := zsub.Connect("tcp://" + zaddr); err != nil {
		t.Fatal(err)
	}
	lz := &libzmq{zctx: zctx, pub: zpub, sub: zsub}
	if err := warm(lz); err != nil {
		t.Fatal(err)
	}
	before := zcounted.Load()
	for range n {
		lz.send(payload)
	}
	for i := range n {
		if _, err := lz.recv(5 * time.Second); err != nil {
			t.Fatalf("libzmq: message %d of %d: %v", i+1, n, err)
		}
	}
	bytesPerMessage(t, "libzmq", zcounted.Load()-before, n, LibzmqWireBytes)
}
