package logd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startKafkaGoServer starts logd with its requests' versions recorded.
func startKafkaGoServer(t *testing.T, mutate ...func(*Config)) (*testServer, *apiLog) {
	t.Helper()
	log := newAPILog()
	return serveTest(t, t.TempDir(), log.wrap, mutate...), log
}

// kafkaGoCreateTopic creates topic through kafka-go's Conn.
func kafkaGoCreateTopic(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	conn, err := kafka.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// kafkaGoRecord is record i of a test batch: key, value and two
// headers derived from i and a prefix.
func kafkaGoRecord(prefix string, i int) kafka.Message {
	return kafka.Message{
		Key:   []byte(fmt.Sprintf("k%d", i%7)),
		Value: bytes.Repeat([]byte(fmt.Sprintf("%s-%d;", prefix, i)), 1+i%5),
		Headers: []kafka.Header{
			{Key: "i", Value: []byte(strconv.Itoa(i))},
			{Key: "prefix", Value: []byte(prefix)},
		},
	}
}

// kafkaGoWriter is a Writer with its own Transport: kafka-go's shared
// DefaultTransport answers a Writer's metadata from a cache refreshed
// every 6 s, so a Writer for a topic created since (through a Conn) on
// the same address fails with UNKNOWN_TOPIC_OR_PARTITION without asking
// the server.
func kafkaGoWriter(t *testing.T, addr, topic string, codec kafka.Compression) *kafka.Writer {
	t.Helper()
	tr := &kafka.Transport{}
	w := &kafka.Writer{
		Transport:    tr,
		Addr:         kafka.TCP(addr),
		Topic:        topic,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchSize:    37, // several batches
		BatchTimeout: 5 * time.Millisecond,
		WriteTimeout: 30 * time.Second,
		ReadTimeout:  30 * time.Second,
	}
	t.Cleanup(func() {
		w.Close()
		tr.CloseIdleConnections()
	})
	return w
}

// TestKafkaGoProduceConsume: kafka-go's Writer (RequiredAcks=-1) writes
// records with keys, values and headers to a one-partition topic,
// uncompressed and with each codec kafka-go offers, and a Reader
// reads them back from the first offset: each once, in order, equal,
// at contiguous offsets.
//
// Versions used: the Writer (kafka-go's Transport) Produce v8,
// Metadata v6 and v8, ApiVersions v0; the Reader (kafka-go's Conn)
// Fetch v10, ListOffsets v1; topics created with CreateTopics v2.
func TestKafkaGoProduceConsume(t *testing.T) {
	ts, log := startKafkaGoServer(t)
	defer log.report(t, "kafka-go")
	codecs := []kafka.Compression{0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd}
	for _, codec := range codecs {
		name := "none"
		if codec != 0 {
			name = codec.String()
		}
		topic := "kg-" + name
		kafkaGoCreateTopic(t, ts.addr, topic, 1)
		const n = 300
		var msgs []kafka.Message
		for i := 0; i < n; i++ {
			msgs = append(msgs, kafkaGoRecord(name, i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := kafkaGoWriter(t, ts.addr, topic, codec).WriteMessages(ctx, msgs...); err != nil {
			cancel()
			t.Fatalf("%s: write: %v", topic, err)
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{ts.addr}, Topic: topic, MaxWait: 500 * time.Millisecond})
		for i := 0; i < n; i++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("%s: read %d of %d: %v", topic, i, n, err)
			}
			want := msgs[i]
			if m.Offset != int64(i) || !bytes.Equal(m.Key, want.Key) || !bytes.Equal(m.Value, want.Value) {
				t.Fatalf("%s: record %d: offset %d key %q value %q, want key %q value %q", topic, i, m.Offset, m.Key, m.Value, want.Key, want.Value)
			}
			if len(m.Headers) != len(want.Headers) {
				t.Fatalf("%s: record %d has %d headers, want %d", topic, i, len(m.Headers), len(want.Headers))
			}
			for j, h := range m.Headers {
				if h.Key != want.Headers[j].Key || !bytes.Equal(h.Value, want.Headers[j].Value) {
					t.Fatalf("%s: record %d header %d is %q=%q, want %q=%q", topic, i, j, h.Key, h.Value, want.Headers[j].Key, want.Headers[j].Value)
				}
			}
		}
		if lag := r.Lag(); lag != 0 {
			t.Fatalf("%s: lag %d after reading everything", topic, lag)
		}
		r.Close()
		cancel()
	}
}

// TestKafkaGoAdmin: kafka-go's Conn and Client against logd's metadata:
// Brokers, Controller, CreateTopics (a second create is answered
// TOPIC_ALREADY_EXISTS), ReadPartitions, a leader connection's
// ReadOffsets, and Client.ListOffsets.
//
// Versions used: Metadata v1 (Conn), v6 and v8 (Client), CreateTopics
// v2 (Conn) and v5 (Client), ListOffsets v1 (Conn) and v5 (Client),
// Produce v8, ApiVersions v0.
func TestKafkaGoAdmin(t *testing.T) {
	ts, log := startKafkaGoServer(t)
	defer log.report(t, "kafka-go")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kafka.DialContext(ctx, "tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	brokers, err := conn.Brokers()
	if err != nil {
		t.Fatal(err)
	}
	controller, err := conn.Controller()
	if err != nil {
		t.Fatal(err)
	}
	if len(brokers) != 1 || brokers[0].ID != controller.ID || net.JoinHostPort(brokers[0].Host, strconv.Itoa(brokers[0].Port)) != ts.addr {
		t.Fatalf("brokers %+v, controller %+v: want one, the controller, at %s", brokers, controller, ts.addr)
	}
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: "meta", NumPartitions: 3, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	cl := &kafka.Client{Addr: kafka.TCP(ts.addr), Timeout: 30 * time.Second}
	created, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "meta", NumPartitions: 3, ReplicationFactor: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := created.Errors["meta"]; !errors.Is(err, kafka.TopicAlreadyExists) {
		t.Fatalf("second create: %v, want %v", err, kafka.TopicAlreadyExists)
	}
	parts, err := conn.ReadPartitions("meta")
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("meta has %d partitions, want 3", len(parts))
	}
	for _, p := range parts {
		if p.Leader.ID != controller.ID || len(p.Replicas) != 1 || len(p.Isr) != 1 {
			t.Fatalf("meta/%d: leader %+v replicas %v isr %v", p.ID, p.Leader, p.Replicas, p.Isr)
		}
	}

	w := kafkaGoWriter(t, ts.addr, "meta", 0)
	w.Balancer = kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 })
	var msgs []kafka.Message
	for i := 0; i < 25; i++ {
		msgs = append(msgs, kafkaGoRecord("meta", i))
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	leader, err := kafka.DialLeader(ctx, "tcp", ts.addr, "meta", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	leader.SetDeadline(time.Now().Add(30 * time.Second))
	if first, last, err := leader.ReadOffsets(); err != nil || first != 0 || last != 25 {
		t.Fatalf("meta/1 offsets %d..%d, %v; want 0..25", first, last, err)
	}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		"meta": {kafka.FirstOffsetOf(1), kafka.LastOffsetOf(1), kafka.LastOffsetOf(2)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]kafka.PartitionOffsets{}
	for _, po := range lo.Topics["meta"] {
		got[po.Partition] = po
	}
	if p1, p2 := got[1], got[2]; len(got) != 2 || p1.Error != nil || p2.Error != nil ||
		p1.FirstOffset != 0 || p1.LastOffset != 25 || p2.LastOffset != 0 {
		t.Fatalf("ListOffsets: %+v; want meta/1 0..25, meta/2 ending at 0", got)
	}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"meta", "absent"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		switch tp.Name {
		case "meta":
			if tp.Error != nil || len(tp.Partitions) != 3 {
				t.Fatalf("metadata meta: %v, %d partitions", tp.Error, len(tp.Partitions))
			}
		case "absent":
			if !errors.Is(tp.Error, kafka.UnknownTopicOrPartition) {
				t.Fatalf("metadata absent: %v", tp.Error)
			}
		}
	}
	if len(log.versions(kmsg.CreateTopics)) == 0 {
		t.Fatal("no CreateTopics seen")
	}
}

// kafkaGoMember is a Reader in a consumer group, fetching in a
// goroutine that reports each record to events and then commits it.
type kafkaGoMember struct {
	r    *kafka.Reader
	stop context.CancelFunc
	done chan struct{}
}

func startKafkaGoMember(t *testing.T, addr, topic, group, name string, events chan<- groupEvent) *kafkaGoMember {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		MaxWait:           200 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		CommitInterval:    100 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		Dialer:            &kafka.Dialer{ClientID: name, Timeout: 10 * time.Second},
		ErrorLogger:       kafka.LoggerFunc(func(f string, a ...any) { t.Logf(name+": "+f, a...) }),
	})
	ctx, cancel := context.WithCancel(context.Background())
	m := &kafkaGoMember{r: r, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.FetchMessage(ctx)
			if err != nil {
				return // the context ended or the reader closed
			}
			events <- groupEvent{member: name, generation: -1, partition: int32(msg.Partition), offset: msg.Offset, value: string(msg.Value)}
			if err := r.CommitMessages(ctx, msg); err != nil && ctx.Err() == nil {
				t.Errorf("%s: commit: %v", name, err)
			}
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

// close stops fetching, then closes the reader, which commits what is
// pending and leaves the group.
func (m *kafkaGoMember) close(t *testing.T) {
	m.stop()
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Error("member did not stop")
	}
	if err := m.r.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("close: %v", err)
	}
}

// TestKafkaGoConsumerGroup: kafka-go Readers with a GroupID against
// logd's group coordinator, on a 4-partition topic. Two members both
// get partitions and read every record, committing each
// (CommitMessages, flushed every 100 ms), which OffsetFetch shows; one
// leaves and the other reads every partition on from the committed
// offsets; after both stopped, a restarted member resumes from them.
// Every record is delivered at least once across the runs, and none is
// delivered again after its commit.
//
// Versions used by the Readers: FindCoordinator v0, JoinGroup v2,
// SyncGroup v0, Heartbeat v0, LeaveGroup v0, OffsetCommit v2,
// OffsetFetch v1, Fetch v10, ListOffsets v1; by the Writer Produce v8,
// Metadata v6; by the test's checks (kafka-go's Client) DescribeGroups
// v5, OffsetFetch v5, FindCoordinator v2.
func TestKafkaGoConsumerGroup(t *testing.T) {
	ts, log := startKafkaGoServer(t, func(c *Config) { c.MinSessionTimeout = time.Second })
	defer log.report(t, "kafka-go")
	const topic, group = "orders", "kg"
	kafkaGoCreateTopic(t, ts.addr, topic, 4)
	w := kafkaGoWriter(t, ts.addr, topic, 0)
	w.Balancer = kafka.BalancerFunc(func(m kafka.Message, _ ...int) int {
		i, _ := strconv.Atoi(string(m.Headers[0].Value))
		return i % 4
	})
	g := newGroupTally()
	produce := func(prefix string, n int) {
		t.Helper()
		var msgs []kafka.Message
		for i := 0; i < n; i++ {
			m := kafkaGoRecord(prefix, i)
			g.produced[string(m.Value)] = false
			msgs = append(msgs, m)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	events := make(chan groupEvent, 4096)
	member := func(name string) *kafkaGoMember {
		return startKafkaGoMember(t, ts.addr, topic, group, name, events)
	}
	cl := &kafka.Client{Addr: kafka.TCP(ts.addr), Timeout: 30 * time.Second}

	deadline := time.After(60 * time.Second)
	next := func(what string) {
		t.Helper()
		select {
		case e := <-events:
			g.record(t, what, e)
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	waitCommitted := func(want int64) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("commits up to %d", want), func() bool {
			resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2, 3}}})
			if err != nil {
				t.Fatal(err)
			}
			ps := resp.Topics[topic]
			for _, p := range ps {
				if p.Error != nil || p.CommittedOffset != want {
					return false
				}
			}
			return len(ps) == 4
		})
		for p := int32(0); p < 4; p++ {
			g.committed[p] = want
		}
	}

	// waitAssigned waits until the group is Stable with the named
	// members (by client ID), each holding some of the 4 partitions.
	waitAssigned := func(names ...string) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("%v sharing the partitions", names), func() bool {
			resp, err := cl.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
			if err != nil {
				t.Fatal(err)
			}
			g := resp.Groups[0]
			if g.Error != nil || g.GroupState != "Stable" || len(g.Members) != len(names) {
				return false
			}
			total := 0
			for i, m := range g.Members {
				if !slices.Contains(names, m.ClientID) || slices.ContainsFunc(g.Members[:i], func(o kafka.DescribeGroupsResponseMember) bool { return o.ClientID == m.ClientID }) {
					return false
				}
				n := 0
				for _, tp := range m.MemberAssignments.Topics {
					n += len(tp.Partitions)
				}
				if n == 0 {
					return false
				}
				total += n
			}
			return total == 4
		})
	}

	// Run 1: a and b share the partitions, then read. (Records are
	// produced once the group is stable: a record a Reader fetched
	// before a rebalance is committed in the next generation, which
	// Kafka accepts, and can move back the commit of the partition's
	// new owner.)
	a := member("a")
	b := member("b")
	waitAssigned("a", "b")
	produce("one", 200)
	for !g.allDelivered() {
		next("run 1's records")
	}
	if g.deliveredBy["a"] == 0 || g.deliveredBy["b"] == 0 {
		t.Fatalf("a read %d records, b %d: want both some", g.deliveredBy["a"], g.deliveredBy["b"])
	}
	waitCommitted(50)

	// b leaves: a reads every partition on from the committed offsets.
	b.close(t)
	waitAssigned("a")
	g.deliveredBy = map[string]int{}
	produce("two", 100)
	for !g.allDelivered() {
		next("run 2's records")
	}
	if g.deliveredBy["a"] != 100 {
		t.Fatalf("after b left a read %d of 100 records", g.deliveredBy["a"])
	}
	waitCommitted(75)
	a.close(t)

	// A restarted member resumes after the commits.
	produce("three", 100)
	member("c")
	for !g.allDelivered() {
		next("run 3's records")
	}
	waitCommitted(100)
	if len(log.versions(kmsg.JoinGroup)) == 0 || len(log.versions(kmsg.OffsetCommit)) == 0 {
		t.Fatal("no JoinGroup or OffsetCommit seen")
	}
}
