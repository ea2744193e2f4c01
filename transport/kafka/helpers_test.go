package kafka

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/transport"
)

// testDeadline bounds every wait of these tests.
const testDeadline = 30 * time.Second

// startLogd runs a logd server in this process on a free port over a
// temporary directory until the test ends, and returns its address.
// mutate adjusts the configuration first.
func startLogd(t testing.TB, mutate ...func(*logd.Config)) string {
	t.Helper()
	cfg := logd.Config{Storage: storage.Config{Dir: t.TempDir()}}
	for _, f := range mutate {
		f(&cfg)
	}
	srv, err := logd.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// parse is ParseURL of a URL the test wrote.
func parse(t testing.TB, raw string) Config {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newPublisher is a Publisher for a URL the test wrote, closed when the
// test ends.
func newPublisher(t testing.TB, raw string) *Publisher {
	t.Helper()
	pub, err := NewPublisher(context.Background(), parse(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	return pub
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic with the given partitions and Kafka configs
// (name, value pairs).
func createTopic(t testing.TB, addr, topic string, partitions int32, configs ...string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := req.RequestWith(ctx, newClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: error %d %v", topic, code, resp.Topics[0].ErrorMessage)
	}
}

// produce writes records synchronously and returns them as
// acknowledged, with their partitions and offsets.
func produce(t testing.TB, cl *kgo.Client, rs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return rs
}

// receiveUntil receives events, copied, until stop says the log so far
// is complete or the deadline passes (a failure).
func receiveUntil(t testing.TB, sub transport.Subscriber, stop func([]transport.Event) bool) []transport.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	var evs []transport.Event
	for !stop(evs) {
		ev, err := sub.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive after %d events: %v", len(evs), err)
		}
		evs = append(evs, copyEvent(ev))
	}
	return evs
}

// messages counts the messages in evs.
func messages(evs []transport.Event) []transport.Message {
	var ms []transport.Message
	for _, ev := range evs {
		if ev.Kind == transport.EventMessage {
			ms = append(ms, ev.Message)
		}
	}
	return ms
}

// untilMessages stops receiveUntil once n messages arrived.
func untilMessages(n int) func([]transport.Event) bool {
	return func(evs []transport.Event) bool { return len(messages(evs)) >= n }
}

func copyEvent(ev transport.Event) transport.Event {
	m := &ev.Message
	m.Key, m.Payload = clone(m.Key), clone(m.Payload)
	hs := make([]transport.Header, len(m.Headers))
	for i, h := range m.Headers {
		hs[i] = transport.Header{Key: h.Key, Value: clone(h.Value)}
	}
	m.Headers = hs
	return ev
}

// committed is the offset group committed for topic's partition p, -1
// when none.
func committed(t testing.TB, addr, group, topic string, p int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == p {
				return rp.Offset
			}
		}
	}
	return -1
}

// groupOpts makes group members quick to notice one another: logd
// allows session timeouts down to 100 ms (startLogd's mutate
// fastGroups), members heartbeat every 50 ms.
var groupOpts = []kgo.Opt{kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(50 * time.Millisecond), kgo.RebalanceTimeout(5 * time.Second)}

func fastGroups(c *logd.Config) { c.MinSessionTimeout = 100 * time.Millisecond }

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// groupCluster starts a one-broker kfake cluster holding topic, of
// partitions partitions, whose groups take session timeouts down to
// 100 ms (a rebalance in a test takes that long, not seconds), and
// returns it and its address; the test's end closes it.
func groupCluster(t *testing.T, partitions int32, topic string) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

// refuseCommit answers an OffsetCommit with, for each partition it
// names, the error code code returns for it.
func refuseCommit(req *kmsg.OffsetCommitRequest, code func(kmsg.OffsetCommitRequestTopicPartition) int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
