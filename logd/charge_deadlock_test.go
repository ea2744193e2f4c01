package logd

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestChargeWaitsForNoFrame: a request whose frame is complete gets its
// decoding's charge without waiting for frames still arriving. Frames
// hold request memory while their connection waits for more (a frame
// grows, a complete one waits for its charge): were both taken from one
// first-come budget, a complete frame would wait behind a growing one
// that waits for it, until the request deadline closed one of them.
// Here (MaxRequestBytes 1 MiB, MaxInFlightRequestBytes 2 MiB, the least
// allowed) B's 1 MiB frame waits for its last byte while A's grows to
// 1 MiB and must wait; then B's last byte arrives.
func TestChargeWaitsForNoFrame(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.MaxInFlightRequestBytes = 2 << 20
		c.RequestTimeout = 5 * time.Second
	})
	if err := ts.autoCreate("p"); err != nil {
		t.Fatal(err)
	}
	produce := func(corr int32) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(7)
		req.Acks, req.TimeoutMillis = 1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "p"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = recordBatch(make([]byte, 1<<20-300))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, corr)
		if n := binary.BigEndian.Uint32(frame); n > 1<<20 || n <= 1<<19 {
			t.Fatalf("frame of %d bytes", n)
		}
		return frame
	}
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	fb := produce(2)
	if _, err := b.Write(fb[:len(fb)-1]); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "B's frame read but its last byte", func() bool { return ts.reqMem.stats().used == 1<<20 })
	if _, err := a.Write(produce(1)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "A's frame waiting to grow", func() bool { return ts.reqMem.stats().waiting == 1 })
	if _, err := b.Write(fb[len(fb)-1:]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		conn net.Conn
	}{{"A", a}, {"B", b}} {
		if _, err := readFrame(c.conn); err != nil {
			t.Fatalf("produce %s not answered: %v", c.name, err)
		}
	}
}
