package logd

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestIdempotentRetryAfterLostAck: the connection is cut after logd
// appended a produce and before its answer reaches the client. franz-go's
// idempotent producer (its default) sends the batch again with the same
// sequence numbers, and logd must store it once, answering with the
// original offsets — also when the retry reaches a restarted logd, whose
// producer state comes from its snapshot, or from the log when the
// snapshot is gone.
func TestIdempotentRetryAfterLostAck(t *testing.T) {
	dir := t.TempDir()
	px := newCutProxy(t)
	startBehind := func() *testServer {
		ts := startServer(t, dir, func(c *Config) {
			c.AdvertisedHost, c.AdvertisedPort = "127.0.0.1", int32(px.port())
		})
		px.setTarget(ts.addr)
		return ts
	}
	ts := startBehind()
	cl := newClient(t, px.addr(), kgo.DefaultProduceTopic("once"), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	createTopic(t, cl, "once", 1)

	var want []string
	produce := func(v string) *kgo.Record {
		t.Helper()
		r := &kgo.Record{Value: []byte(v)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		want = append(want, v)
		return r
	}
	// produceCut produces v while the proxy drops the answer to its first
	// attempt; between the cut and the retry, restart (if set) runs.
	produceCut := func(v string, restart func()) {
		t.Helper()
		px.cutNextProduce(restart != nil)
		done := make(chan *kgo.Record, 1)
		go func() { done <- produce(v) }()
		select {
		case <-px.cut:
		case <-time.After(30 * time.Second):
			t.Fatal("the proxy cut nothing")
		}
		if restart != nil {
			restart()
			px.resume()
		}
		select {
		case r := <-done:
			if r.ProducerID < 0 {
				t.Fatal("the producer is not idempotent")
			}
			if r.Offset != int64(len(want)-1) {
				t.Fatalf("%s acknowledged at offset %d, want %d: the retry was not answered with the original offset", v, r.Offset, len(want)-1)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s was never acknowledged", v)
		}
	}

	for i := range 5 {
		produce(fmt.Sprintf("a%d", i))
	}
	produceCut("cut-1", nil)
	produce("b0")
	produceCut("cut-2", func() { // a clean restart: the producer-state snapshot
		ts.Close()
		ts = startBehind()
	})
	produce("c0")
	produceCut("cut-3", func() { // the snapshot is gone: rebuilt from the log
		ts.Close()
		if err := os.Remove(filepath.Join(dir, "once-0", "producer-state")); err != nil {
			t.Fatal(err)
		}
		ts = startBehind()
	})
	produce("d0")
	if px.cuts() != 3 {
		t.Fatalf("%d answers cut, want 3", px.cuts())
	}

	c := newClient(t, ts.addr, kgo.ConsumeTopics("once"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if end := listEnd(t, c, "once"); end != int64(len(want)) {
		t.Fatalf("log end %d after %d records: a retry was stored again", end, len(want))
	}
	for i, r := range consume(t, c, len(want)) {
		if string(r.Value) != want[i] || r.Offset != int64(i) {
			t.Fatalf("record %d: %q at offset %d, want %q", i, r.Value, r.Offset, want[i])
		}
	}
}

// cutProxy relays Kafka connections to a target and can drop the answer
// to a Produce: it forwards the request, and when the response comes
// back it closes both connections instead of relaying it.
type cutProxy struct {
	t  *testing.T
	ln net.Listener

	mu       sync.Mutex
	target   string
	armed    bool          // cut the next Produce's answer
	pauseCut bool          // after that cut, hold new connections until resume
	paused   chan struct{} // closed by resume
	n        int
	cut      chan struct{}
	conns    []net.Conn
}

func newCutProxy(t *testing.T) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, ln: ln, cut: make(chan struct{}, 1)}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go p.accept()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }
func (p *cutProxy) port() int    { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *cutProxy) setTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *cutProxy) cutNextProduce(pause bool) {
	p.mu.Lock()
	p.armed, p.pauseCut = true, pause
	p.mu.Unlock()
}

func (p *cutProxy) resume() {
	p.mu.Lock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
	p.mu.Unlock()
}

func (p *cutProxy) cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *cutProxy) serve(c net.Conn) {
	p.mu.Lock()
	wait := p.paused
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	if wait != nil {
		<-wait
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	s, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, s)
	p.mu.Unlock()
	var (
		mu     sync.Mutex
		doomed = map[uint32]bool{} // correlation ids whose answers are cut
	)
	closeBoth := func() { c.Close(); s.Close() }
	go func() { // client → logd
		defer closeBoth()
		for {
			frame, err := readKafkaFrame(c)
			if err != nil {
				return
			}
			key, corr := binary.BigEndian.Uint16(frame[4:]), binary.BigEndian.Uint32(frame[8:])
			p.mu.Lock()
			if key == 0 && p.armed { // Produce
				p.armed = false
				mu.Lock()
				doomed[corr] = true
				mu.Unlock()
			}
			p.mu.Unlock()
			if _, err := s.Write(frame); err != nil {
				return
			}
		}
	}()
	defer closeBoth() // logd → client
	for {
		frame, err := readKafkaFrame(s)
		if err != nil {
			return
		}
		mu.Lock()
		cut := doomed[binary.BigEndian.Uint32(frame[4:])]
		mu.Unlock()
		if cut {
			p.mu.Lock()
			p.n++
			if p.pauseCut {
				p.paused = make(chan struct{})
			}
			p.mu.Unlock()
			p.cut <- struct{}{}
			return
		}
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

// readKafkaFrame reads one size-prefixed frame, the size included.
func readKafkaFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// TestProduceRefusesNegativeSequence: a batch with a producer ID and a
// negative base sequence is refused with INVALID_RECORD, as Kafka's
// LogValidator does. It was once stored with sequence -1 remembered, and
// the producer's next, different batch with the same header was answered
// as a duplicate: success, its records dropped.
func TestProduceRefusesNegativeSequence(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	for i := range 2 {
		b := kmsg.RecordBatch{
			Magic: 2, FirstTimestamp: int64(i), MaxTimestamp: int64(i),
			ProducerID: 7, ProducerEpoch: 0, FirstSequence: -1,
			NumRecords: 1, Records: rawRecord(fmt.Sprint(i)),
		}
		b.Length = int32(61 - 12 + len(b.Records))
		raw := b.AppendTo(nil)
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
		if p := produceRaw(t, cl, "t", raw); p.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("batch %d of producer 7 with base sequence -1: error %d at offset %d, want %d (INVALID_RECORD)", i, p.ErrorCode, p.BaseOffset, kerr.InvalidRecord.Code)
		}
	}
}

// rawRecord encodes one uncompressed record with value v.
func rawRecord(v string) []byte {
	r := kmsg.Record{Value: []byte(v)}
	body := r.AppendTo(nil)[1:] // AppendTo writes Length (0, one byte) first
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// TestInitProducerIDAlwaysFresh: an InitProducerId without a
// transactional id gets a new producer id at epoch 0 even when it names
// an id and epoch (KIP-360 fields), as from Kafka, whose coordinator
// hands an idempotent producer a fresh id whatever it asks. logd once
// answered the named id with the next epoch, without knowing whose it
// was: a client that brought an id from another server (a Kafka cluster
// or another logd, which both number producers from 0) then shared
// (id, epoch) with a producer of this one, and its first batch, with the
// same sequence numbers as that producer's, was answered as a duplicate
// of it — acknowledged, and never stored.
func TestInitProducerIDAlwaysFresh(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	initPID := func(id int64, epoch int16) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.ProducerID, req.ProducerEpoch = id, epoch
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("InitProducerId(%d, %d): %v, error %d", id, epoch, err, resp.ErrorCode)
		}
		return resp.ProducerID, resp.ProducerEpoch
	}
	batch := func(id int64, epoch int16, v string) []byte {
		b := kmsg.RecordBatch{
			Magic: 2, ProducerID: id, ProducerEpoch: epoch, FirstSequence: 0,
			NumRecords: 1, Records: rawRecord(v),
		}
		b.Length = int32(61 - 12 + len(b.Records))
		raw := b.AppendTo(nil)
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
		return raw
	}

	// A producer of this server, after a bump of its own.
	id, epoch := initPID(-1, -1)
	id, epoch = initPID(id, epoch)
	if p := produceRaw(t, cl, "t", batch(id, epoch, "mine")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first producer: error %d at offset %d", p.ErrorCode, p.BaseOffset)
	}
	// A client whose id 0 came from elsewhere asks for a bump of it.
	otherID, otherEpoch := initPID(0, 0)
	p := produceRaw(t, cl, "t", batch(otherID, otherEpoch, "theirs"))
	if p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Errorf("second producer's batch: error %d at offset %d, want offset 1: its record was not stored", p.ErrorCode, p.BaseOffset)
	}
	if otherEpoch != 0 || otherID == id {
		t.Errorf("InitProducerId(0, 0) gave (%d, %d), want a new id at epoch 0 (the first producer has (%d, %d))", otherID, otherEpoch, id, epoch)
	}
}

// TestDurableWaitAfterReload: an acks=all produce whose wait for its
// batch begins only after the partition was fenced (a failed fsync) and
// reloaded is answered KAFKA_STORAGE_ERROR, not success. The reload cut
// the batch and the next append took its offsets; the answer's wait,
// made by offset alone, once took that append's fsync for its own. The
// wait can begin that late: the connection's writer makes it once the
// answers before it are written, and a request waits for its partitions
// one after another.
func TestDurableWaitAfterReload(t *testing.T) {
	faults := vfs.NewFaults(vfs.NewLazy())
	var failing atomic.Bool
	faults.SetRule(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync && failing.Load() {
			return syscall.EIO
		}
		return nil
	})
	store, err := storage.Open(storage.Config{Dir: "/data", FS: faults, MaintenanceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.CreateTopic("t", 1, storage.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	log, err := store.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(v string) []byte { return rawBatch(0, 1, rawRecord(v), 1000) }

	failing.Store(true)
	res, err := log.Append(batch("lost")) // answered later, by the connection's writer
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Sync(); err == nil {
		t.Fatal("fsync did not fail")
	}
	failing.Store(false)
	if err := store.Maintain(time.Now()); err != nil || log.Fenced() {
		t.Fatalf("not unfenced: %v", err)
	}
	other, err := log.Append(batch("other"))
	if err != nil || other.BaseOffset != res.BaseOffset {
		t.Fatalf("next append at %d (%v), want the cut batch's offset %d", other.BaseOffset, err, res.BaseOffset)
	}
	if err := log.WaitAppended(context.Background(), other); err != nil {
		t.Fatal(err)
	}

	resp := kmsg.NewPtrProduceResponse()
	resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "t", Partitions: []kmsg.ProduceResponseTopicPartition{{BaseOffset: res.BaseOffset}}}}
	w := &durableWait{resp: resp, waits: []durablePartition{{log: log, res: res}}, deadline: time.Now().Add(time.Minute)}
	w.finish(context.Background())
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("the cut batch's produce answered with error %d, want %d (KAFKA_STORAGE_ERROR): acknowledged, and not stored", code, kerr.KafkaStorageError.Code)
	}
}
