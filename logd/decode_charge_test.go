package logd

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocated is what f allocates (the whole process's, so tests that
// use it do not run in parallel).
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// emptyElements returns a request frame (without its size) of key at
// version whose path-th array (counted depth first, the arrays before
// it holding one element) holds n default elements, or nil when the
// request has no such array. With tags, its top-level tag section holds
// n unknown tags instead.
func emptyElements(key kmsg.Key, version int16, path, n int, tags bool) []byte {
	req := kmsg.RequestForKey(key.Int16())
	req.SetVersion(version)
	if tags {
		t := reflect.ValueOf(req).Elem().FieldByName("UnknownTags").Addr().Interface().(*kmsg.Tags)
		for i := range n {
			t.Set(uint32(i+128), nil)
		}
	} else if i := 0; !fillArray(reflect.ValueOf(req).Elem(), path, n, &i) {
		return nil
	}
	return requestFrame(req)
}

func fillArray(v reflect.Value, path, n int, i *int) bool {
	for f := range v.NumField() {
		field := v.Field(f)
		if field.Kind() != reflect.Slice || field.Type().Elem().Kind() != reflect.Struct {
			continue
		}
		this := *i
		*i++
		k := 1
		if this == path {
			k = n
		}
		s := reflect.MakeSlice(field.Type(), k, k)
		for j := range k {
			if d := s.Index(j).Addr().MethodByName("Default"); d.IsValid() {
				d.Call(nil)
			}
		}
		if this == path || fillArray(s.Index(0), path, n, i) {
			field.Set(s)
			return true
		}
	}
	return false
}

// TestDecodeChargeCovers: what decoding and answering a request
// allocates is within what decodeCharge charges for it, for every
// supported API and version, with any one of its arrays holding 20000
// empty elements (the most elements a frame can name) or its tag section
// 20000 unknown tags. JoinGroup and SyncGroup are only decoded (their
// answers wait for a group); the group state they keep is bounded by
// MaxGroupBytes.
func TestDecodeChargeCovers(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector enlarges allocations")
	}
	ts := startServer(t, t.TempDir(), func(c *Config) { c.DisableAutoCreateTopics = true })
	check := func(name string, key kmsg.Key, frame []byte) {
		t.Helper()
		charge, err := decodeCharge(frame)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var derr error
		got := allocated(func() {
			var req *request
			if req, derr = decodeRequest(frame); derr != nil || key == kmsg.JoinGroup || key == kmsg.SyncGroup {
				return
			}
			resp, err := ts.handle(&client{}, req)
			if err == nil && resp != nil {
				appendResponse(nil, 1, resp)
			}
		})
		if derr != nil {
			t.Fatalf("%s: %v", name, derr)
		}
		if got > charge {
			t.Errorf("%s: answering %d bytes allocated %d, charged %d", name, len(frame), got, charge)
		}
	}
	// Distinct names are answered one by one (the same name is answered
	// once).
	for _, v := range []int16{1, 9} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		for i := range 50000 {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(strconv.FormatInt(int64(i), 36))})
		}
		check(fmt.Sprintf("Metadata v%d of distinct names", v), kmsg.Metadata, requestFrame(req))
	}
	// DescribeGroups' groups are names, not elements emptyElements
	// fills: every version, distinct names (the same name is answered
	// once).
	for v := supported[kmsg.DescribeGroups].min; v <= supported[kmsg.DescribeGroups].max; v++ {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(v)
		for i := range 20000 {
			req.Groups = append(req.Groups, strconv.FormatInt(int64(i), 36))
		}
		check(fmt.Sprintf("DescribeGroups v%d of distinct names", v), kmsg.DescribeGroups, requestFrame(req))
	}
	for key, vr := range supported {
		for v := vr.min; v <= vr.max; v++ {
			for path := -1; ; path++ {
				if path < 0 && !isFlexible(key, v) {
					continue
				}
				frame := emptyElements(key, v, path, 20000, path < 0)
				if frame == nil {
					break
				}
				check(fmt.Sprintf("%s v%d array %d (-1: tags)", kmsg.NameForKey(key.Int16()), v, path), key, frame)
			}
		}
	}
}

func isFlexible(key kmsg.Key, v int16) bool {
	req := kmsg.RequestForKey(key.Int16())
	req.SetVersion(v)
	return req.IsFlexible()
}

// TestDecodedMemoryBound: a request of many empty array elements (a
// Metadata naming 2 million topics "", a Produce of 600000 partitions
// without records, 4 MiB each) used to decode into 24 times its frame,
// none of it charged to request memory; now what handling it allocates
// is within the budget.
func TestDecodedMemoryBound(t *testing.T) {
	const (
		maxReq = 4 << 20
		limit  = 2 * maxReq
	)
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = maxReq
		c.MaxInFlightRequestBytes = limit
		c.DisableAutoCreateTopics = true
	})
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(9)
	meta.Topics = make([]kmsg.MetadataRequestTopic, (maxReq-64)/2)
	for i := range meta.Topics {
		meta.Topics[i].Topic = kmsg.StringPtr("")
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks = 1
	produce.TimeoutMillis = 1000
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "p", Partitions: make([]kmsg.ProduceRequestTopicPartition, (maxReq-64)/6)}}
	for _, req := range []kmsg.Request{meta, produce} {
		name := kmsg.NameForKey(req.Key())
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 1)
		if len(frame) > maxReq {
			t.Fatalf("%s frame %d bytes, over %d", name, len(frame), maxReq)
		}
		c := dial(t, ts.addr)
		got := allocated(func() {
			if _, err := c.Write(frame); err != nil {
				t.Fatal(err)
			}
			// The answer (if any) is read and dropped in small pieces.
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err == nil {
				_, _ = io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
			}
			c.Close()
			waitUntil(t, "request memory given back", func() bool { return ts.reqMem.stats().used == 0 && ts.decodeMem.stats().used == 0 })
		})
		t.Logf("%s: a %d KiB request allocated %d KiB", name, len(frame)>>10, got>>10)
		// The frame's buffers and the answer's, within the budget.
		if bound := int64(limit + 2<<20); got > bound {
			t.Errorf("%s: a %d KiB request allocated %d MiB, request memory %d MiB", name, len(frame)>>10, got>>20, limit>>20)
		}
	}
}

// requestFrame is req's frame (without its size) as client "c" sends
// it with correlation 1.
func requestFrame(req kmsg.Request) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 1)[4:]
}

// answerAllocated is what decoding frame, handling it on ts and
// encoding its answer allocate.
func answerAllocated(t *testing.T, ts *testServer, frame []byte) int64 {
	return allocated(func() {
		dreq, err := decodeRequest(frame)
		if err != nil {
			t.Error(err)
			return
		}
		if resp, err := ts.handle(&client{}, dreq); err == nil && resp != nil {
			appendResponse(nil, 1, resp)
		}
	})
}

// manyPartitionsPerTopic is how many partitions each of
// manyPartitionsServer's topics has.
const manyPartitionsPerTopic = 1000

// manyPartitionsServer starts a server with the least request memory
// the configuration allows (twice MaxRequestBytes of 2 MiB) and creates
// topics "many-a" and "many-b" of manyPartitionsPerTopic partitions.
func manyPartitionsServer(t *testing.T) (*testServer, *kgo.Client, []string) {
	t.Helper()
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 2 << 20
		c.MaxInFlightRequestBytes = 4 << 20
		c.DisableAutoCreateTopics = true
	})
	cl := newClient(t, ts.addr)
	topics := []string{"many-a", "many-b"}
	for _, topic := range topics {
		createTopic(t, cl, topic, manyPartitionsPerTopic)
	}
	return ts, cl, topics
}

// answerManyPartitions checks that what decoding req (named name, of
// partitions partitions), handling it on ts and encoding its answer
// allocate is within its charge (not measured under the race detector,
// which enlarges allocations), and returns cl's answer to req.
func answerManyPartitions(t *testing.T, ts *testServer, cl *kgo.Client, name string, req kmsg.Request, partitions int) kmsg.Response {
	t.Helper()
	v := req.GetVersion()
	frame := requestFrame(req)
	charge, err := decodeCharge(frame)
	if err != nil {
		t.Fatal(err)
	}
	if !raceEnabled { // the race detector enlarges allocations
		if got := answerAllocated(t, ts, frame); got > charge {
			t.Errorf("%s v%d of %d partitions: answering %d bytes allocated %d, charged %d", name, v, partitions, len(frame), got, charge)
		}
	}
	resp, err := requestWithin(cl, req)
	if err != nil {
		t.Fatalf("%s v%d of %d partitions: %v", name, v, partitions, err)
	}
	return resp
}

// requestWithin sends req to broker 0 of cl and waits at most 30
// seconds for its answer.
func requestWithin(cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cl.Broker(0).Request(ctx, req)
}

// TestScanAllocatesNothing: decodeCharge scans a Produce frame without
// allocating (its scanner stays on the stack).
func TestScanAllocatesNothing(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = make([]byte, 64)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	frame := requestFrame(req)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := decodeCharge(frame); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("decodeCharge of a Produce frame allocated %v times, want 0", n)
	}
}
