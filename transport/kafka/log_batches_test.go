package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/peertest"
)

// readLog reads stream from pos with ReadEach until want records came,
// checking that offsets follow one another, and returns copies of them.
func readLog(t *testing.T, log *Log, stream transport.StreamID, pos uint64, want int) []transport.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	var out []transport.Message
	for len(out) < want {
		_, err := log.ReadEach(ctx, stream, pos, func(m *transport.Message) {
			if m.Seq != pos || m.Stream != stream || m.Topic != stream.Topic {
				t.Fatalf("record at offset %d of %s, topic %q, where %d of %s is due", m.Seq, m.Stream, m.Topic, pos, stream)
			}
			c := *m
			c.Headers = append([]transport.Header(nil), m.Headers...)
			out = append(out, c)
			pos++
		})
		if err != nil {
			t.Fatalf("ReadEach at %d, after %d records: %v", pos, len(out), err)
		}
	}
	return out
}

// TestLogReadsProducedBatches: what kgo produced, in batches of many
// records, uncompressed and with each codec, reads back record for
// record, from the start and from the middle of a batch, with a fetch
// size smaller than one batch (each fetch then holds one batch whole,
// larger than the fetch size, or ends with a part of one).
func TestLogReadsProducedBatches(t *testing.T) {
	addr := startLogd(t)
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "b-" + name
			createTopic(t, addr, topic, 1)
			cl := newClient(t, addr, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
			base := time.UnixMilli(1_700_000_000_000)
			var rs []*kgo.Record
			for i := range 2000 {
				r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "value %d %s", i, strings.Repeat("x", i%50)),
					Timestamp: base.Add(time.Duration(i) * time.Millisecond),
					Headers:   []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}, {Key: "e", Value: nil}}}
				if i%3 == 0 {
					r.Key = fmt.Appendf(nil, "k%d", i)
				}
				rs = append(rs, r)
			}
			produce(t, cl, rs...)
			ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			cfg := parse(t, "logd://"+addr+"/"+topic)
			cfg.LogFetchBytes = 4096
			log, err := OpenLog(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			stream := transport.StreamID{Topic: topic}
			for _, from := range []int{0, 1337} {
				ms := readLog(t, log, stream, uint64(from), 2000-from)
				for i, m := range ms {
					want := rs[from+i]
					if !bytes.Equal(m.Payload, want.Value) || !bytes.Equal(m.Key, want.Key) || (m.Key == nil) != (want.Key == nil) ||
						!m.Time.Equal(want.Timestamp) || len(m.Headers) != 2 || m.Headers[0].Key != "i" ||
						string(m.Headers[0].Value) != fmt.Sprint(from+i) || m.Headers[1].Key != "e" {
						t.Fatalf("from %d, record %d: %+v, want %+v", from, from+i, m, want)
					}
				}
			}
		})
	}
}

// TestLogReadsKcatBatches: what librdkafka (kcat -P) produced, with
// each codec it has, reads back line for line.
func TestLogReadsKcatBatches(t *testing.T) {
	kcat := peertest.LookPath(t, "kcat", "apt-get install kcat (.ci/install.d/30-logd.sh)")
	addr := startLogd(t)
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, "k%d:line %d %s\n", i%7, i, strings.Repeat("y", i%40))
	}
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			createTopic(t, addr, topic, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-t", topic, "-P", "-K:", "-z", codec, "-X", "acks=all", "-X", "linger.ms=20")
			cmd.Stdin = strings.NewReader(in.String())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P -z %s: %v\n%s", codec, err, out)
			}
			cfg := parse(t, "logd://"+addr+"/"+topic)
			cfg.LogFetchBytes = 8192
			log, err := OpenLog(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			for _, from := range []int{0, 2999} {
				ms := readLog(t, log, transport.StreamID{Topic: topic}, uint64(from), 3000-from)
				for i, m := range ms {
					n := from + i
					if string(m.Key) != fmt.Sprintf("k%d", n%7) || string(m.Payload) != fmt.Sprintf("line %d %s", n, strings.Repeat("y", n%40)) {
						t.Fatalf("kcat -z %s, record %d: key %q, value %q", codec, n, m.Key, m.Payload)
					}
				}
			}
		})
	}
}

// TestLogOffsetsOutOfRange: a read at an offset retention deleted starts
// at the log's start; one past the end waits for the record to be
// written there.
func TestLogOffsetsOutOfRange(t *testing.T) {
	addr := startLogd(t, retentionLogd)
	createTopic(t, addr, "oor", 1)
	cl := newClient(t, addr)
	value := make([]byte, 100)
	for range 100 {
		produce(t, cl, &kgo.Record{Topic: "oor", Value: value})
	}
	start := waitLogStart(t, cl, "oor", 2)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	log, err := OpenLog(ctx, parse(t, "logd://"+addr+"/oor"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	stream := transport.StreamID{Topic: "oor"}
	ms, err := log.Read(ctx, stream, 0)
	if err != nil || len(ms) == 0 || ms[0].Seq < uint64(start) {
		t.Fatalf("read at 0, the log starting at %d: %d records from %v, %v", start, len(ms), offsets(ms), err)
	}
	// Past the end: the read waits, then hands the record at 102.
	got := make(chan []transport.Message, 1)
	go func() {
		ms, err := log.Read(ctx, stream, 102)
		if err != nil {
			t.Error(err)
		}
		got <- ms
	}()
	for i := range 3 {
		produce(t, cl, &kgo.Record{Topic: "oor", Value: fmt.Appendf(nil, "late %d", i)})
	}
	if ms := <-got; len(ms) == 0 || ms[0].Seq != 102 || string(ms[0].Payload) != "late 2" {
		t.Fatalf("read past the end: %+v, want the record written at 102 first", ms)
	}
}

// TestLogRecover: what a Log does with each kind of error a fetch
// answers: a leader that moved or a broker gone is looked up again and
// fetched again; an error that asking again does not cure is reported;
// a closed client is transport.ErrClosed.
func TestLogRecover(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "rec", 1)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	log, err := OpenLog(ctx, parse(t, "logd://"+addr+"/rec"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for _, again := range []error{kerr.NotLeaderForPartition, kerr.UnknownTopicOrPartition, kerr.FencedLeaderEpoch, errors.New("connection reset"), fmt.Errorf("request: %w", context.DeadlineExceeded)} {
		if _, err := log.leaderOf(ctx, 0); err != nil {
			t.Fatal(err)
		}
		off := int64(5)
		if err := log.recover(ctx, 0, &off, again); err != nil || off != 5 {
			t.Errorf("%v: %v, offset %d: want to fetch again from 5", again, err, off)
		}
		if log.leaders != nil {
			t.Errorf("%v: the leaders are still known: want them looked up again", again)
		}
	}
	off := int64(5)
	if err := log.recover(ctx, 0, &off, kerr.TopicAuthorizationFailed); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("authorization: %v, want it reported", err)
	}
	if err := log.recover(ctx, 0, &off, kgo.ErrClientClosed); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("client closed: %v, want transport.ErrClosed", err)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Millisecond)
	defer cancelShort()
	<-short.Done()
	if err := log.recover(short, 0, &off, kerr.NotLeaderForPartition); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Errorf("leader moved, context ended: %v, want the fetch's error", err)
	}
	log.Close()
	if err := log.recover(ctx, 0, &off, context.Canceled); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("closed log, its request cancelled: %v, want transport.ErrClosed", err)
	}
	if _, err := log.Read(ctx, transport.StreamID{Topic: "rec"}, 0); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("read of a closed log: %v, want transport.ErrClosed", err)
	}
}

// fakeBroker answers a Log's fetches from batches, the way brokers
// before Kafka 0.10.1 did: the batches from the one that holds the
// offset on, cut at the fetch size, the first one too.
type fakeBroker struct {
	mu       sync.Mutex
	batches  [][]byte
	end      int64   // the high watermark
	errs     []error // answered first, one a fetch
	asked    []int64 // the offsets fetched, in order
	askedLen []int32
}

func (f *fakeBroker) send(_ context.Context, _ int32, off int64, size int32) fetched {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked, f.askedLen = append(f.asked, off), append(f.askedLen, size)
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return fetched{err: err}
	}
	var data []byte
	for _, b := range f.batches {
		last := int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:])))
		if last >= off {
			data = append(data, b...)
		}
	}
	return fetched{data: data[:min(len(data), int(size))], end: f.end}
}

func (f *fakeBroker) requests() ([]int64, []int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked), slices.Clone(f.askedLen)
}

func fakeLog(t *testing.T, f *fakeBroker, bytes int32) *Log {
	bg, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	return &Log{topic: "f", bytes: bytes, bg: bg, stop: stop, dec: newBatchDecoder(kgo.DefaultDecompressor()), send: f.send}
}

// TestLogFetchLoop: against a broker that cuts fetches at the fetch size
// (the last batch, and a first batch larger than the fetch size), a Log
// fetches again from the cut batch, asking for all of a batch larger
// than the fetch size; a fetch that holds only control batches moves
// on; an error that asking again cures is asked again; and the next
// fetch is sent before the records of one are handed on.
func TestLogFetchLoop(t *testing.T) {
	ctrl := testBatch{base: 30, lastDelta: -1, attrs: attrControl, records: []testRecord{{key: []byte{0, 0, 0, 1}, value: []byte{}}}}
	f := &fakeBroker{end: 41, errs: []error{kerr.NotLeaderForPartition},
		batches: [][]byte{plainBatch(0, 10).bytes(t), plainBatch(10, 20).bytes(t), ctrl.bytes(t), plainBatch(31, 10).bytes(t)}}
	first := len(f.batches[0])
	log := fakeLog(t, f, int32(first+20)) // the first batch and a part of the second
	stream := transport.StreamID{Topic: "f"}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	var got []uint64
	pos := uint64(0)
	for pos < 41 {
		_, err := log.ReadEach(ctx, stream, pos, func(m *transport.Message) {
			if m.Seq == 0 {
				// The next fetch, from 10, is in flight before the
				// records of this one are handed on.
				if log.ahead == nil || log.ahead.offset != 10 {
					t.Errorf("record 0 handed with no fetch from 10 in flight: %+v", log.ahead)
				}
			}
			got = append(got, m.Seq)
			pos = m.Seq + 1
		})
		if err != nil {
			t.Fatalf("ReadEach at %d: %v", pos, err)
		}
	}
	want := make([]uint64, 0, 40)
	for i := range uint64(41) {
		if i != 30 {
			want = append(want, i)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records %v, want 0..40 but the control record at 30", got)
	}
	asked, sizes := f.requests()
	// 0 (not leader), 0, 10 cut inside the second batch: asked again
	// for all of it, then 30 (the control batch and the last one).
	t.Logf("fetches at %v of %v bytes", asked, sizes)
	if !slices.ContainsFunc(sizes, func(s int32) bool { return s >= int32(len(f.batches[1])) }) {
		t.Errorf("fetch sizes %v at %v: the second batch, larger than the fetch size, was never asked for whole", sizes, asked)
	}
	if asked[0] != 0 || asked[1] != 0 {
		t.Errorf("fetches at %v: want the one answered 'not leader' asked again", asked)
	}
}

// TestLogReadBounded: a read hands about logReadRecords records at most,
// stopping after the batch that reaches it; the next read, from there,
// goes on with the rest of the same fetch without asking the broker.
func TestLogReadBounded(t *testing.T) {
	f := &fakeBroker{end: 1800}
	for base := int64(0); base < 1800; base += 600 {
		f.batches = append(f.batches, plainBatch(base, 600).bytes(t))
	}
	log := fakeLog(t, f, 1<<20)
	stream := transport.StreamID{Topic: "f"}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	var got []uint64
	fn := func(m *transport.Message) { got = append(got, m.Seq) }
	if n, err := log.ReadEach(ctx, stream, 0, fn); err != nil || n != 1200 {
		t.Fatalf("first read: %d records, %v: want two batches, 1200", n, err)
	}
	asked, _ := f.requests()
	if n, err := log.ReadEach(ctx, stream, 1200, fn); err != nil || n != 600 {
		t.Fatalf("second read: %d records, %v: want the last batch, 600", n, err)
	}
	if again, _ := f.requests(); len(again) != len(asked) {
		t.Fatalf("the second read asked the broker again: %v after %v", again, asked)
	}
	for i, off := range got {
		if off != uint64(i) {
			t.Fatalf("record %d at offset %d", i, off)
		}
	}
	// A read elsewhere drops the rest: fetched again.
	if n, err := log.ReadEach(ctx, stream, 100, fn); err != nil || n != 1100 {
		t.Fatalf("read back at 100: %d records, %v: want 1100 (500 of the first batch, the second)", n, err)
	}
}

// TestLogDropNotCancelled: a read elsewhere than where the request in
// flight fetches gives that request up without cancelling it (kgo
// closes the connection to cancel a request whose answer it reads).
func TestLogDropNotCancelled(t *testing.T) {
	f := &fakeBroker{end: 30, batches: [][]byte{plainBatch(0, 10).bytes(t), plainBatch(10, 20).bytes(t)}}
	log := fakeLog(t, f, int32(len(f.batches[0]))) // one batch a fetch
	release, cancelled := make(chan struct{}), make(chan bool, 1)
	send := f.send
	log.send = func(ctx context.Context, p int32, off int64, size int32) fetched {
		if off == 10 { // the request sent ahead
			<-release
			cancelled <- ctx.Err() != nil
		}
		return send(ctx, p, off, size)
	}
	stream := transport.StreamID{Topic: "f"}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	for range 2 { // the second read gives up the request sent ahead by the first
		if n, err := log.ReadEach(ctx, stream, 0, func(*transport.Message) {}); err != nil || n != 10 {
			t.Fatalf("read at 0: %d records, %v", n, err)
		}
	}
	close(release)
	for range 2 {
		if <-cancelled {
			t.Fatal("the request sent ahead was cancelled when given up")
		}
	}
}
