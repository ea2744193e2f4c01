package logd

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRequest writes one framed request (header v1: key, version,
// correlation, client id) with body, and reads one response frame.
func rawRequest(t *testing.T, c net.Conn, key, version int16, body []byte) ([]byte, error) {
	t.Helper()
	if err := writeRequest(c, key, version, body); err != nil {
		return nil, err
	}
	return readFrame(c)
}

// writeRequest writes one framed request, as rawRequest does.
func writeRequest(c net.Conn, key, version int16, body []byte) error {
	frame := binary.BigEndian.AppendUint16(nil, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, 42)
	frame = binary.BigEndian.AppendUint16(frame, 4)
	frame = append(frame, "test"...)
	frame = append(frame, body...)
	out := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
	_, err := c.Write(append(out, frame...))
	return err
}

func readFrame(c net.Conn) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c, b)
	return b, err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestApiVersionsUnknownVersion: a version we do not know gets a v0 body
// (header without tag byte) with UNSUPPORTED_VERSION and the full list.
func TestApiVersionsUnknownVersion(t *testing.T) {
	ts := startServer(t, t.TempDir())
	c := dial(t, ts.addr)
	resp, err := rawRequest(t, c, kmsg.ApiVersions.Int16(), 99, nil)
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint32(resp) != 42 {
		t.Fatal("correlation id")
	}
	var r kmsg.ApiVersionsResponse
	r.SetVersion(0)
	if err := r.ReadFrom(resp[4:]); err != nil {
		t.Fatal(err)
	}
	if r.ErrorCode != kerr.UnsupportedVersion.Code || len(r.ApiKeys) != len(supported) {
		t.Fatalf("%+v", r)
	}
	// A flexible version: the response header still has no tag byte.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	body := append([]byte{0}, req.AppendTo(nil)...) // request header v2 tags, then body
	resp, err = rawRequest(t, c, kmsg.ApiVersions.Int16(), 3, body)
	if err != nil {
		t.Fatal(err)
	}
	r = kmsg.ApiVersionsResponse{Version: 3}
	if err := r.ReadFrom(resp[4:]); err != nil || r.ErrorCode != 0 {
		t.Fatalf("v3: %v %+v", err, r)
	}
}

// TestBadRequestsCloseOnlyTheirConnection: oversized, truncated,
// unknown-key and unsupported-version requests close that connection;
// another client is served meanwhile.
func TestBadRequestsCloseOnlyTheirConnection(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.MaxRequestBytes = 4096 })
	good := dial(t, ts.addr)
	cases := []struct {
		name string
		send func(c net.Conn)
	}{
		{"oversized", func(c net.Conn) { c.Write(binary.BigEndian.AppendUint32(nil, 1<<30)) }},
		{"tiny", func(c net.Conn) { c.Write([]byte{0, 0, 0, 2, 0, 1}) }},
		{"unknown key", func(c net.Conn) { rawRequest(t, c, 999, 0, nil) }},
		{"unsupported version", func(c net.Conn) { rawRequest(t, c, kmsg.Produce.Int16(), 1, nil) }},
		{"garbage body", func(c net.Conn) { rawRequest(t, c, kmsg.Metadata.Int16(), 9, []byte{0xff, 0xff, 0xff}) }},
	}
	for _, tc := range cases {
		c := dial(t, ts.addr)
		tc.send(c)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("%s: connection still open", tc.name)
		}
		if _, err := rawRequest(t, good, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
			t.Fatalf("after %s, the good client was not served: %v", tc.name, err)
		}
	}
	if ts.metrics.badFrames.Load() < 3 {
		t.Fatalf("bad frames counted: %d", ts.metrics.badFrames.Load())
	}
}

// FuzzDecodeRequest: no frame panics the request decoder.
func FuzzDecodeRequest(f *testing.F) {
	for _, k := range []kmsg.Request{kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrJoinGroupRequest()} {
		for _, v := range []int16{0, 4, 9} {
			k.SetVersion(v)
			hdr := binary.BigEndian.AppendUint16(nil, uint16(k.Key()))
			hdr = binary.BigEndian.AppendUint16(hdr, uint16(v))
			hdr = append(hdr, 0, 0, 0, 1, 0xff, 0xff)
			if k.IsFlexible() {
				hdr = append(hdr, 0)
			}
			f.Add(k.AppendTo(hdr))
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := decodeRequest(frame)
		if err == nil && req.body != nil {
			req.body.AppendTo(nil)
		}
	})
}

// TestMaxTopics: auto-creation stops at MaxTopics, with a clear error and
// a count; existing topics keep working.
func TestMaxTopics(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.MaxTopics = 3 })
	cl := newClient(t, ts.addr)
	for i := 0; i < 3; i++ {
		createTopic(t, cl, fmt.Sprintf("t%d", i), 1)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("one-too-many")
	req.Topics, req.AllowAutoTopicCreation = append(req.Topics, rt), true
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.PolicyViolation.Code {
		t.Fatalf("error %d, want POLICY_VIOLATION", code)
	}
	if ts.metrics.topicsRefused.Load() != 1 {
		t.Fatal("refusal not counted")
	}
	produceN(t, cl, "t1", "still", 3)
}

// TestAcksZeroFailureClosesConnection: an acks=0 produce gets no answer,
// so when a partition of it fails the connection is closed, as Kafka
// does, for the producer to notice (it was once dropped silently and
// the connection served on); one that succeeds leaves it open.
func TestAcksZeroFailureClosesConnection(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.DisableAutoCreateTopics = true })
	createTopic(t, newClient(t, ts.addr), "t", 1)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("acks0"))
	for _, c := range []struct {
		topic  string
		closed bool
	}{{"t", false}, {"no-such-topic", true}} {
		conn := dial(t, ts.addr)
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(7)
		req.Acks, req.TimeoutMillis = 0, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = c.topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, recordBatch([]byte("v"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(0)
		if _, err := conn.Write(append(f.AppendRequest(nil, req, 1), f.AppendRequest(nil, av, 2)...)); err != nil {
			t.Fatal(err)
		}
		if _, err := readFrame(conn); (err != nil) != c.closed {
			t.Errorf("acks=0 produce to %s, then ApiVersions: answer error %v, want the connection closed: %v", c.topic, err, c.closed)
		}
	}
	if n := ts.metrics.acksZeroHangUps.Load(); n != 1 {
		t.Errorf("acksZeroHangUps = %d, want 1", n)
	}
}

// TestFetchErrorAnsweredAtOnce: a Fetch with a partition in error
// (OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION) is answered at once,
// as Kafka's ReplicaManager does, not after MaxWait (30 s here; the
// bound, 10 s, only tells at once from MaxWait).
func TestFetchErrorAnsweredAtOnce(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.DisableAutoCreateTopics = true })
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	for _, c := range []struct {
		topic  string
		offset int64
		want   int16
	}{{"t", 1000, kerr.OffsetOutOfRange.Code}, {"missing", 0, kerr.UnknownTopicOrPartition.Code}} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 30000, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = c.topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, c.offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err != nil {
			t.Fatalf("fetch of %s at %d: no answer within 10 s (MaxWait 30 s): %v", c.topic, c.offset, err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != c.want {
			t.Errorf("fetch of %s at %d: error %d, want %d", c.topic, c.offset, code, c.want)
		}
	}
}
