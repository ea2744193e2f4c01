package logd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saramaConfig is a sarama client configuration for a test against
// logd at the given Kafka version (sarama picks each request's version
// from it, then lowers it to what ApiVersions advertises).
func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "logd-sarama-test"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	return cfg
}

// startSaramaServer starts logd with its requests' versions recorded.
func startSaramaServer(t *testing.T, mutate ...func(*Config)) (*testServer, *apiLog) {
	t.Helper()
	log := newAPILog()
	ts := serveTest(t, t.TempDir(), log.wrap, mutate...)
	return ts, log
}

func saramaAdmin(t *testing.T, addr string, cfg *sarama.Config) sarama.ClusterAdmin {
	t.Helper()
	admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

func saramaCreateTopic(t *testing.T, admin sarama.ClusterAdmin, topic string, partitions int32) {
	t.Helper()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// saramaRecord is record i of a test batch: key, value and two headers
// derived from i and a prefix.
func saramaRecord(topic, prefix string, i int) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{
		Topic: topic,
		Key:   sarama.StringEncoder(fmt.Sprintf("k%d", i%7)),
		Value: sarama.ByteEncoder(bytes.Repeat([]byte(fmt.Sprintf("%s-%d;", prefix, i)), 1+i%5)),
		Headers: []sarama.RecordHeader{
			{Key: []byte("i"), Value: []byte(fmt.Sprint(i))},
			{Key: []byte("prefix"), Value: []byte(prefix)},
		},
	}
}

func saramaProduce(t *testing.T, p sarama.SyncProducer, msgs []*sarama.ProducerMessage) {
	t.Helper()
	if err := p.SendMessages(msgs); err != nil {
		if errs, ok := err.(sarama.ProducerErrors); ok {
			t.Fatalf("%d of %d messages failed, first: %v", len(errs), len(msgs), errs[0].Err)
		}
		t.Fatal(err)
	}
}

// TestSaramaProduceConsume: sarama's SyncProducer (acks=all) writes
// records with keys, values and headers to a one-partition topic,
// uncompressed and with each codec sarama offers, and its Consumer
// reads them back from the oldest offset: each once, in order, equal,
// at contiguous offsets. Run at two configured Kafka versions: sarama's
// default (2.8) and 0.11, the oldest that logd's Produce v3 minimum
// admits.
//
// Versions used (logged at the end of each subtest): at 2.8, Produce
// v9, Fetch v12, Metadata v9 (sarama wants 10; ApiVersions lowers it),
// ListOffsets v6, CreateTopics v7, ApiVersions v3. At 0.11, Produce
// v3, Fetch v5, Metadata v4, ListOffsets v2, CreateTopics v2.
func TestSaramaProduceConsume(t *testing.T) {
	codecs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD}
	for _, version := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V0_11_0_0} {
		t.Run(version.String(), func(t *testing.T) {
			ts, log := startSaramaServer(t)
			defer log.report(t, "sarama")
			admin := saramaAdmin(t, ts.addr, saramaConfig(version))
			for _, codec := range codecs {
				if codec == sarama.CompressionZSTD && !version.IsAtLeast(sarama.V2_1_0_0) {
					continue // sarama refuses zstd before 2.1, as Kafka does
				}
				topic := "s-" + codec.String()
				saramaCreateTopic(t, admin, topic, 1)
				cfg := saramaConfig(version)
				cfg.Producer.Compression = codec
				cfg.Producer.Flush.MaxMessages = 37 // several batches
				saramaRoundTrip(t, ts.addr, cfg, topic, 300)
			}
		})
	}
}

// saramaRoundTrip produces n records to partition 0 of topic and reads
// them back from the oldest offset.
func saramaRoundTrip(t *testing.T, addr string, cfg *sarama.Config, topic string, n int) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for i := 0; i < n; i++ {
		msgs = append(msgs, saramaRecord(topic, cfg.Producer.Compression.String(), i))
	}
	saramaProduce(t, p, msgs)

	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	deadline := time.After(30 * time.Second)
	for i := 0; i < n; i++ {
		var m *sarama.ConsumerMessage
		select {
		case m = <-pc.Messages():
		case err := <-pc.Errors():
			t.Fatalf("%s: consume: %v", topic, err)
		case <-deadline:
			t.Fatalf("%s: got %d of %d records", topic, i, n)
		}
		want := msgs[i]
		wk, _ := want.Key.Encode()
		wv, _ := want.Value.Encode()
		if m.Offset != int64(i) || !bytes.Equal(m.Key, wk) || !bytes.Equal(m.Value, wv) {
			t.Fatalf("%s: record %d: offset %d key %q value %q, want key %q value %q", topic, i, m.Offset, m.Key, m.Value, wk, wv)
		}
		if len(m.Headers) != len(want.Headers) {
			t.Fatalf("%s: record %d has %d headers, want %d", topic, i, len(m.Headers), len(want.Headers))
		}
		for j, h := range m.Headers {
			if !bytes.Equal(h.Key, want.Headers[j].Key) || !bytes.Equal(h.Value, want.Headers[j].Value) {
				t.Fatalf("%s: record %d header %d is %q=%q, want %q=%q", topic, i, j, h.Key, h.Value, want.Headers[j].Key, want.Headers[j].Value)
			}
		}
		if want.Offset != m.Offset {
			t.Fatalf("%s: record %d was acknowledged at offset %d, read at %d", topic, i, want.Offset, m.Offset)
		}
	}
	hw := pc.HighWaterMarkOffset()
	if hw != int64(n) {
		t.Fatalf("%s: high watermark %d, want %d", topic, hw, n)
	}
}

// TestSaramaIdempotentProducer: sarama's idempotent producer
// (Producer.Idempotent, Net.MaxOpenRequests=1) gets a producer ID from
// logd and its records are stored once each, with that ID, at
// contiguous offsets per partition.
//
// Versions used: InitProducerId v4, Produce v9, Metadata v9,
// CreateTopics v7 (and franz-go's own Fetch to read the producer IDs).
func TestSaramaIdempotentProducer(t *testing.T) {
	ts, log := startSaramaServer(t)
	cfg := saramaConfig(sarama.V2_8_0_0)
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Flush.MaxMessages = 20
	saramaCreateTopic(t, saramaAdmin(t, ts.addr, cfg), "idem", 2)
	p, err := sarama.NewSyncProducer([]string{ts.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 200
	var msgs []*sarama.ProducerMessage
	for i := 0; i < n; i++ {
		msgs = append(msgs, saramaRecord("idem", "idem", i))
	}
	saramaProduce(t, p, msgs)
	// A second send on the same producer: its sequence numbers go on
	// from the first's.
	saramaProduce(t, p, []*sarama.ProducerMessage{saramaRecord("idem", "idem", n)})
	if len(log.versions(kmsg.InitProducerID)) == 0 {
		t.Fatal("sarama sent no InitProducerId")
	}
	log.report(t, "sarama")

	c := newClient(t, ts.addr, kgo.ConsumeTopics("idem"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consume(t, c, n+1)
	next := map[int32]int64{}
	pid := got[0].ProducerID
	for _, r := range got {
		if r.ProducerID < 0 || r.ProducerID != pid {
			t.Fatalf("record at %d/%d has producer ID %d, want %d (not -1)", r.Partition, r.Offset, r.ProducerID, pid)
		}
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
	}
	if len(got) != n+1 {
		t.Fatalf("read %d records, want %d", len(got), n+1)
	}
}

// TestSaramaAdmin: sarama's ClusterAdmin and Client against logd's
// metadata: DescribeCluster, ListTopics (Metadata and DescribeConfigs),
// DescribeTopics, CreateTopic (and its TOPIC_ALREADY_EXISTS), and the
// client's GetOffset (ListOffsets) for the oldest and newest offsets.
//
// Versions used: Metadata v9, DescribeConfigs v4, CreateTopics v7,
// ListOffsets v6, Produce v9.
func TestSaramaAdmin(t *testing.T) {
	ts, log := startSaramaServer(t)
	defer log.report(t, "sarama")
	cfg := saramaConfig(sarama.V2_8_0_0)
	admin := saramaAdmin(t, ts.addr, cfg)
	brokers, controller, err := admin.DescribeCluster()
	if err != nil {
		t.Fatal(err)
	}
	if len(brokers) != 1 || brokers[0].ID() != controller || brokers[0].Addr() != ts.addr {
		t.Fatalf("cluster: brokers %v, controller %d; want one, the controller, at %s", brokers, controller, ts.addr)
	}
	saramaCreateTopic(t, admin, "meta", 3)
	err = admin.CreateTopic("meta", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("second create: %v, want %v", err, sarama.ErrTopicAlreadyExists)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := topics["meta"]; !ok || d.NumPartitions != 3 {
		t.Fatalf("ListTopics: %+v", topics)
	}
	md, err := admin.DescribeTopics([]string{"meta", "absent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range md {
		switch m.Name {
		case "meta":
			if m.Err != sarama.ErrNoError || len(m.Partitions) != 3 {
				t.Fatalf("meta: %v, %d partitions", m.Err, len(m.Partitions))
			}
			for _, p := range m.Partitions {
				if p.Leader != controller || len(p.Replicas) != 1 || len(p.Isr) != 1 {
					t.Fatalf("meta/%d: leader %d replicas %v isr %v", p.ID, p.Leader, p.Replicas, p.Isr)
				}
			}
		case "absent":
			if m.Err != sarama.ErrUnknownTopicOrPartition {
				t.Fatalf("absent: %v", m.Err)
			}
		}
	}

	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer([]string{ts.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 25; i++ {
		m := saramaRecord("meta", "meta", i)
		m.Partition = 1
		msgs = append(msgs, m)
	}
	saramaProduce(t, p, msgs)
	cl, err := sarama.NewClient([]string{ts.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, c := range []struct {
		at   int64
		want int64
	}{{sarama.OffsetOldest, 0}, {sarama.OffsetNewest, 25}} {
		got, err := cl.GetOffset("meta", 1, c.at)
		if err != nil || got != c.want {
			t.Fatalf("GetOffset(meta/1, %d) = %d, %v; want %d", c.at, got, err, c.want)
		}
	}
}

// groupEvent is what a consumer-group member reports to its test: a
// new session's partitions (setup) or one record delivered.
type groupEvent struct {
	member     string
	setup      bool
	generation int32
	partitions []int32 // setup: the session's claims
	partition  int32   // a record's
	offset     int64
	value      string
}

// saramaHandler reports every session and record to events, and marks
// each record after reporting it (at-least-once); sarama commits what
// is marked.
type saramaHandler struct {
	name   string
	topic  string
	events chan<- groupEvent
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	ps := slices.Clone(s.Claims()[h.topic])
	slices.Sort(ps)
	h.events <- groupEvent{member: h.name, setup: true, generation: s.GenerationID(), partitions: ps}
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.events <- groupEvent{member: h.name, generation: s.GenerationID(), partition: m.Partition, offset: m.Offset, value: string(m.Value)}
		s.MarkMessage(m, "")
	}
	return nil
}

// saramaMember runs one member of group until stopped.
type saramaMember struct {
	group sarama.ConsumerGroup
	stop  context.CancelFunc
	done  chan struct{}
}

func startSaramaMember(t *testing.T, addr string, cfg *sarama.Config, group string, h *saramaHandler) *saramaMember {
	t.Helper()
	g, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{group: g, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{h.topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Logf("%s: consume: %v", h.name, err)
			}
		}
	}()
	go func() {
		for err := range g.Errors() {
			// A commit racing a rebalance fails (REBALANCE_IN_PROGRESS,
			// ILLEGAL_GENERATION): at-least-once allows it.
			t.Logf("%s: %v", h.name, err)
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

// close leaves the group and waits for the member's loop to end.
func (m *saramaMember) close(t *testing.T) {
	m.stop()
	if err := m.group.Close(); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
		t.Errorf("close: %v", err)
	}
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Error("member did not stop")
	}
}

// TestSaramaConsumerGroup: sarama's ConsumerGroup against logd's group
// coordinator, on a 4-partition topic. Two members both get partitions
// and read every record; each commits what it read (MarkMessage and
// sarama's auto-commit), which logd's OffsetFetch shows; one leaves and
// the other takes every partition over from the committed offsets;
// after both stopped, a restarted member resumes from the committed
// offsets. Every record is delivered at least once across the runs,
// and none is delivered again after its commit.
//
// Run at sarama's default Kafka version (2.8) and at 1.0. Versions used
// at 2.8: FindCoordinator v3, JoinGroup v7, SyncGroup v5, Heartbeat v4,
// LeaveGroup v4, OffsetCommit v8, OffsetFetch v7, Fetch v12,
// ListOffsets v6, Metadata v9. At 1.0: FindCoordinator v1, JoinGroup
// v2, SyncGroup v1, Heartbeat v1, LeaveGroup v1, OffsetCommit v3,
// OffsetFetch v3, Fetch v6, ListOffsets v2, Metadata v5.
func TestSaramaConsumerGroup(t *testing.T) {
	for _, version := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V1_0_0_0} {
		t.Run(version.String(), func(t *testing.T) { testSaramaConsumerGroup(t, version) })
	}
}

func testSaramaConsumerGroup(t *testing.T, version sarama.KafkaVersion) {
	ts, log := startSaramaServer(t, func(c *Config) { c.MinSessionTimeout = time.Second })
	defer log.report(t, "sarama")
	const topic, group = "orders", "sg"
	cfg := saramaConfig(version)
	admin := saramaAdmin(t, ts.addr, cfg)
	saramaCreateTopic(t, admin, topic, 4)

	pcfg := saramaConfig(version)
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{ts.addr}, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	g := newGroupTally()
	produce := func(prefix string, n int) {
		var msgs []*sarama.ProducerMessage
		for i := 0; i < n; i++ {
			m := saramaRecord(topic, prefix, i)
			m.Partition = int32(i % 4)
			v, _ := m.Value.Encode()
			g.produced[string(v)] = false
			msgs = append(msgs, m)
		}
		saramaProduce(t, producer, msgs)
	}

	gcfg := saramaConfig(version)
	gcfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	gcfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	gcfg.Consumer.Group.Session.Timeout = 6 * time.Second
	gcfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	gcfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	events := make(chan groupEvent, 4096)
	member := func(name string) *saramaMember {
		return startSaramaMember(t, ts.addr, gcfg, group, &saramaHandler{name: name, topic: topic, events: events})
	}

	sessions := map[string]groupEvent{}
	deadline := time.After(60 * time.Second)
	// next handles one event, failing on a record delivered again after
	// its commit.
	next := func(what string) {
		t.Helper()
		select {
		case e := <-events:
			if e.setup {
				sessions[e.member] = e
				return
			}
			g.record(t, what, e)
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	// waitCommitted waits until OffsetFetch shows every partition
	// committed up to want, then holds the test to it.
	waitCommitted := func(want int64) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("commits up to %d", want), func() bool {
			resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2, 3}})
			if err != nil {
				t.Fatal(err)
			}
			for p := int32(0); p < 4; p++ {
				b := resp.GetBlock(topic, p)
				if b == nil || b.Err != sarama.ErrNoError || b.Offset != want {
					return false
				}
			}
			return true
		})
		for p := int32(0); p < 4; p++ {
			g.committed[p] = want
		}
	}

	// Run 1: a alone, then b joins; both get partitions and read.
	produce("one", 40)
	a := member("a")
	for len(sessions["a"].partitions) != 4 {
		next("a's first session")
	}
	b := member("b")
	for len(sessions["b"].partitions) == 0 || len(sessions["a"].partitions) == 0 ||
		sessions["a"].generation != sessions["b"].generation {
		next("a session shared by a and b")
	}
	if got := append(slices.Clone(sessions["a"].partitions), sessions["b"].partitions...); len(got) != 4 {
		t.Fatalf("a has %v, b has %v: want the 4 partitions shared", sessions["a"].partitions, sessions["b"].partitions)
	}
	g.deliveredBy = map[string]int{}
	produce("two", 200)
	for !g.allDelivered() {
		next("run 1's records")
	}
	if g.deliveredBy["a"] == 0 || g.deliveredBy["b"] == 0 {
		t.Fatalf("after both joined a read %d, b %d records", g.deliveredBy["a"], g.deliveredBy["b"])
	}
	waitCommitted(60)

	// b leaves: a takes every partition over from the committed offsets.
	b.close(t)
	gen := sessions["a"].generation
	for sessions["a"].generation == gen || len(sessions["a"].partitions) != 4 {
		next("a's session with every partition")
	}
	produce("three", 100)
	for !g.allDelivered() {
		next("run 2's records")
	}
	waitCommitted(85)
	a.close(t)

	// A restarted member resumes after the commits.
	produce("four", 100)
	member("c")
	for !g.allDelivered() {
		next("run 3's records")
	}
	waitCommitted(110)
	if len(log.versions(kmsg.JoinGroup)) == 0 || len(log.versions(kmsg.OffsetCommit)) == 0 {
		t.Fatal("no JoinGroup or OffsetCommit seen")
	}
}
