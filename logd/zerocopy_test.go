package logd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// fillHoles is the response appendFetchResponse encodes, with its holes
// filled (file regions read from their files).
func fillHoles(t *testing.T, out []byte, holes []hole) []byte {
	t.Helper()
	var b []byte
	prev := 0
	for _, h := range holes {
		b = append(b, out[prev:h.at]...)
		prev = h.at
		if h.file.File == nil {
			b = append(b, h.data...)
			continue
		}
		r := make([]byte, h.file.Len)
		if _, err := h.file.File.ReadAt(r, h.file.Off); err != nil {
			t.Fatal(err)
		}
		b = append(b, r...)
	}
	return append(b, out[prev:]...)
}

// TestFetchEncodingMatchesKmsg: for every Fetch version logd speaks, a
// response encoded with its record sets as holes (bytes, file regions),
// the holes filled, is byte for byte kmsg's encoding of the same
// response, and the size field counts the holes.
func TestFetchEncodingMatchesKmsg(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seg")
	fileData := bytes.Repeat([]byte("0123456789abcdef"), 300)
	if err := os.WriteFile(file, fileData, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for v := supported[kmsg.Fetch].min; v <= supported[kmsg.Fetch].max; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			build := func(fromFile bool) *kmsg.FetchResponse {
				resp := kmsg.NewPtrFetchResponse()
				resp.SetVersion(v)
				resp.ThrottleMillis = 7
				for ti, name := range []string{"a", "topic-b"} {
					rt := kmsg.NewFetchResponseTopic()
					rt.Topic = name
					for pi := range 4 {
						rp := kmsg.NewFetchResponseTopicPartition()
						rp.Partition = int32(pi)
						rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 1000+int64(pi), 999, 3
						rp.PreferredReadReplica = -1
						switch pi {
						case 0: // bytes read
							rp.RecordBatches = []byte(fmt.Sprintf("records of %s-%d", name, pi))
						case 1: // an error, an empty set
							rp.ErrorCode, rp.RecordBatches = 1, []byte{}
						case 2: // a file region
							rp.RecordBatches = fileData[100+ti : 3000+ti]
							if fromFile {
								rp.RecordBatches = []byte{}
							}
						case 3: // refused: null, and aborted transactions
							rp.HighWatermark = -1
							rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 5, FirstOffset: 6}}
						}
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
				return resp
			}
			want := appendResponse(nil, 42, build(false))
			regions := []storage.Region{2: {File: f, Off: 100, Len: 2900}, 6: {File: f, Off: 101, Len: 2900}}
			out, holes := appendFetchResponse([]byte("prefix"), 42, build(true), regions, nil)
			got := fillHoles(t, out, holes)[len("prefix"):]
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from kmsg's:\n got %x\nwant %x", got, want)
			}
			if len(holes) != 4 {
				t.Fatalf("%d holes, want 4 (2 read, 2 from the file)", len(holes))
			}
		})
	}
}

// fetchRaw sends a Fetch request of version v on c and returns the
// response frame (without its size).
func fetchRaw(t *testing.T, c net.Conn, r *bufio.Reader, v int16, corr int32, offset int64, maxBytes int32) []byte {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = -1, maxBytes, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "z"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	out := kmsg.NewRequestFormatter(kmsg.FormatterClientID("zc")).AppendRequest(nil, req, corr)
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, frame); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(v)
	body := frame[4:]
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("v%d: kmsg cannot decode the response: %v", v, err)
	}
	return frame
}

// openSegmentFiles counts this process's descriptors of .log files
// under dir.
func openSegmentFiles(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir) && strings.HasSuffix(target, ".log") {
			n++
		}
	}
	return n
}

// TestZeroCopyFetchMatchesCopy: for every Fetch version, from every
// offset and with byte limits below a batch, around the index interval
// and across segments, a connection that sends record sets from the
// segment files gets byte for byte the responses of one that reads
// them; the first did send from the files, the second did not; and no
// descriptor of a segment file is left open by the sends.
func TestZeroCopyFetchMatchesCopy(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("record sets are sent from files only on Linux")
	}
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Storage.SegmentBytes = 16 << 10
		c.Storage.IndexIntervalBytes = 512
	})
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "z", 1)
	end := int64(0)
	for b := range 60 {
		var values [][]byte
		for i := range 1 + b%9 {
			values = append(values, bytes.Repeat([]byte{byte('a' + i)}, 10+37*((b+i)%11)))
		}
		produceBatch(t, cl, "z", recordBatch(values...))
		end += int64(len(values))
	}
	segFiles := openSegmentFiles(t, ts.dir)
	pass := func() [][]byte {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r := bufio.NewReader(c)
		var out [][]byte
		corr := int32(0)
		for v := supported[kmsg.Fetch].min; v <= supported[kmsg.Fetch].max; v++ {
			for off := int64(0); off <= end; off += 3 {
				for _, maxBytes := range []int32{1, 200, 512, 1500, 5000, 20000, 1 << 20} {
					corr++
					out = append(out, fetchRaw(t, c, r, v, corr, off, maxBytes))
				}
			}
		}
		// An answer without records last: once it is here, the writer
		// has released every earlier answer.
		corr++
		fetchRaw(t, c, r, 12, corr, end, 1<<20)
		if n := openSegmentFiles(t, ts.dir); n != segFiles {
			t.Fatalf("%d descriptors of segment files open after the fetches, %d before", n, segFiles)
		}
		return out
	}
	zc := pass()
	sent := ts.metrics.fetchZeroCopy.Load()
	if sent == 0 {
		t.Fatal("no record bytes were sent from files")
	}
	ts.noZeroCopy.Store(true)
	copied := pass()
	if got := ts.metrics.fetchZeroCopy.Load(); got != sent {
		t.Fatalf("the copying connection sent %d bytes from files", got-sent)
	}
	for i := range zc {
		if !bytes.Equal(zc[i], copied[i]) {
			t.Fatalf("response %d differs:\nsendfile %x\n    copy %x", i, zc[i], copied[i])
		}
	}
}

// fetchPartitions is a Fetch v11 of the given partitions of topic, each from
// the offset given, that waits for nothing.
func fetchPartitions(topic string, offsets map[int32]int64, order []int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<30
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for _, p := range order {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestFetchRepeatedPartitionAnsweredOnce: a partition named several
// times in one Fetch is answered once, where it first appears, from the
// offset of its last mention (Kafka keys the request by partition); a
// 100 KB request naming one partition 5000 times once got 5000 copies
// of its records.
func TestFetchRepeatedPartitionAnsweredOnce(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr, kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "t", 2)
	for i := range 3 {
		for p := range int32(2) {
			r := &kgo.Record{Topic: "t", Partition: p, Value: fmt.Appendf(nil, "v%d", i)}
			if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	req := fetchPartitions("t", nil, []int32{1, 0, 1, 1, 0})
	req.Topics[0].Partitions[3].FetchOffset = 2 // partition 1's last mention
	extra := kmsg.NewFetchRequestTopic()        // the topic again, naming partition 0 again
	extra.Topic = "t"
	p0 := kmsg.NewFetchRequestTopicPartition()
	p0.Partition, p0.FetchOffset, p0.PartitionMaxBytes = 0, 1, 1<<20
	extra.Partitions = append(extra.Partitions, p0)
	req.Topics = append(req.Topics, extra)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			first := int64(-1)
			if len(rp.RecordBatches) >= 8 {
				first = int64(binary.BigEndian.Uint64(rp.RecordBatches))
			}
			got = append(got, fmt.Sprintf("%s/%d@%d", rt.Topic, rp.Partition, first))
		}
	}
	if want := "[t/1@2 t/0@1]"; fmt.Sprint(got) != want {
		t.Errorf("answered %v, want %s", got, want)
	}
	if n := ts.metrics.fetchRepeated.Load(); n != 4 {
		t.Errorf("fetchRepeated = %d, want 4", n)
	}
}

// TestFetchUnreadAnswerPinsFewDescriptors: a client that sends a Fetch
// of many partitions and never reads the answer holds at most
// maxFetchFilesPerConn segment descriptors (each record set sent with
// sendfile holds one until written, up to IdleTimeout); the rest are
// copied into the answer, counted.
func TestFetchUnreadAnswerPinsFewDescriptors(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	const partitions = 48
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "t", partitions)
	val := make([]byte, 512<<10)
	var order []int32
	for p := range int32(partitions) {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "t", Partition: p, Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		order = append(order, p)
	}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow")).AppendRequest(nil, fetchPartitions("t", nil, order), 1)
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(4096)
	fetched := ts.metrics.fetchedBytes.Load()
	if _, err := c.Write(frame); err != nil { // the answer (24 MiB) is never read
		t.Fatal(err)
	}
	waitUntil(t, "the fetch to be read", func() bool { return ts.metrics.fetchedBytes.Load()-fetched >= partitions*uint64(len(val)) })
	pinned := fds() - before - 2 // the client's socket, the server's
	t.Logf("a connection not reading its answer holds %d descriptors; %d record sets copied", pinned, ts.metrics.fetchFilesRefused.Load())
	if pinned > maxFetchFilesPerConn {
		t.Errorf("a connection not reading its Fetch answer holds %d segment descriptors, want ≤ %d", pinned, maxFetchFilesPerConn)
	}
}
