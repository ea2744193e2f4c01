package logd

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// testServer runs a Server on a free loopback port over dir until the
// test ends.
type testServer struct {
	*Server
	addr string
	dir  string
	cfg  Config
	wrap func(net.Listener) net.Listener // nil: a plain listener
}

func startServer(t testing.TB, dir string, mutate ...func(*Config)) *testServer {
	t.Helper()
	return serveTest(t, dir, nil, mutate...)
}

// serveTest is startServer behind wrap (when not nil), e.g. a TLS
// listener.
func serveTest(t testing.TB, dir string, wrap func(net.Listener) net.Listener, mutate ...func(*Config)) *testServer {
	t.Helper()
	cfg := Config{Storage: storage.Config{Dir: dir}}
	for _, f := range mutate {
		f(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: srv, addr: ln.Addr().String(), dir: dir, cfg: cfg, wrap: wrap}
	if wrap != nil {
		ln = wrap(ln)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ts
}

// restart closes the server and starts another over the same directory.
func (ts *testServer) restart(t testing.TB) *testServer {
	t.Helper()
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := ts.cfg
	return serveTest(t, ts.dir, ts.wrap, func(c *Config) { *c = cfg })
}

// freeAddr returns a loopback address no one listens on, for a server
// in a child process.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
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

func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32, configs ...string) {
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
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: error %d %v", topic, code, resp.Topics[0].ErrorMessage)
	}
}

// produceN produces values "<prefix>-<i>" synchronously and returns the
// records as acknowledged.
func produceN(t testing.TB, cl *kgo.Client, topic, prefix string, n int) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// consume polls until n records arrived or the deadline passes.
func consume(t testing.TB, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("got %d of %d records: %v", len(got), n, err)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

func newListOffsets(topic string) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// waitUntil polls cond until it holds, failing the test after 10 s.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
