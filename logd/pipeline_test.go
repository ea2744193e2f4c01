package logd

import (
	"encoding/binary"
	"io/fs"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestProducePipelined: while an acks=all produce waits for its fsync,
// the next request of the same connection is read and appended (so one
// producer's in-flight requests overlap writing with syncing), and the
// answers still come back in request order, each with its own offsets.
func TestProducePipelined(t *testing.T) {
	gate := &gateFS{FS: vfs.OS}
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Storage.FS = gate })
	createTopic(t, newClient(t, ts.addr), "p", 1)
	log, err := ts.store.Partition("p", 0)
	if err != nil {
		t.Fatal(err)
	}

	entered := gate.close() // segment fsyncs block from here on
	t.Cleanup(gate.open)    // before the server closes (cleanups run last first)
	c := dial(t, ts.addr)
	sendProduce(t, c, 1, "p", recordBatch([]byte("a")))
	<-entered // the first batch's fsync has started and is held
	sendProduce(t, c, 2, "p", recordBatch([]byte("b"), []byte("c")))
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(7)
	if err := writeRequestCorr(c, 3, kmsg.Metadata.Int16(), 7, meta.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second produce appended while the first waits for its fsync", func() bool { return log.EndOffset() == 3 })
	gate.open()

	for i, want := range []struct {
		corr int32
		base int64
	}{{1, 0}, {2, 1}, {3, -1}} {
		b, err := readFrame(c)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if corr := int32(binary.BigEndian.Uint32(b)); corr != want.corr {
			t.Fatalf("answer %d has correlation id %d, want %d (answers out of request order)", i, corr, want.corr)
		}
		if want.base < 0 {
			continue
		}
		var r kmsg.ProduceResponse
		r.SetVersion(7)
		if err := r.ReadFrom(b[4:]); err != nil {
			t.Fatal(err)
		}
		p := r.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != want.base {
			t.Fatalf("produce %d: error %d, base offset %d, want 0, %d", want.corr, p.ErrorCode, p.BaseOffset, want.base)
		}
	}
}

// sendProduce writes an acks=all Produce v7 of batch to partition 0 of
// topic.
func sendProduce(t *testing.T, c net.Conn, corr int32, topic string, batch []byte) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := writeRequestCorr(c, corr, kmsg.Produce.Int16(), 7, req.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
}

// writeRequestCorr writes one framed request (header v1) with its
// correlation id.
func writeRequestCorr(c net.Conn, corr int32, key, version int16, body []byte) error {
	frame := binary.BigEndian.AppendUint16(nil, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, 4)
	frame = append(frame, "test"...)
	frame = append(frame, body...)
	_, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...))
	return err
}

// gateFS holds segment fsyncs (files ending in .log) while closed.
type gateFS struct {
	vfs.FS
	mu      sync.Mutex
	held    chan struct{} // closed by open
	entered chan struct{} // closed when a held fsync starts
}

// close makes segment fsyncs wait until open; the channel it returns
// is closed when the first of them starts waiting.
func (g *gateFS) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.entered = make(chan struct{}), make(chan struct{})
	return g.entered
}

// open lets held fsyncs go on, and new ones pass.
func (g *gateFS) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

func (g *gateFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &gateFile{File: f, fs: g}, nil
}

type gateFile struct {
	vfs.File
	fs *gateFS
}

func (f *gateFile) Sync() error {
	f.fs.mu.Lock()
	held, entered := f.fs.held, f.fs.entered
	if held != nil {
		select {
		case <-entered:
		default:
			close(entered)
		}
	}
	f.fs.mu.Unlock()
	if held != nil {
		<-held
	}
	return f.File.Sync()
}
