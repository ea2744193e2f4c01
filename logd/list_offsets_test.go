package logd

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestAt sends req at the version it is set to on c (unlike a
// kgo.Client, which picks the version) and decodes the answer.
func requestAt(t *testing.T, c net.Conn, req kmsg.Request) kmsg.Response {
	t.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	if _, err := c.Write(f.AppendRequest(nil, req, 7)); err != nil {
		t.Fatal(err)
	}
	b, err := readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	b = b[4:] // correlation id
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		b = b[1:] // the response header's tags
	}
	if err := resp.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestListOffsetsSpecialTimestamps: ListOffsets answers -3
// (MAX_TIMESTAMP, v7) with the first record of the largest timestamp,
// and, as Kafka does, refuses with UNSUPPORTED_VERSION a negative
// timestamp its version does not define. -3 at v1-6 was once taken for
// a time and answered with the partition's first record, which a client
// asking for the newest record (kadm's ListMaxTimestampOffsets, Kafka's
// GetOffsetShell --time -3) took for it.
func TestListOffsetsSpecialTimestamps(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(0))
	createTopic(t, cl, "t", 1)
	at := func(ms ...int64) {
		t.Helper()
		var recs []*kgo.Record
		for _, m := range ms {
			recs = append(recs, &kgo.Record{Value: []byte("v"), Timestamp: time.UnixMilli(m)})
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	at(1000, 5000, 3000) // offsets 0-2: the largest timestamp inside a batch
	at(2000)             // 3
	at(5000, 4000)       // 4-5: the largest again, later

	c := dial(t, ts.addr)
	query := func(version int16, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := newListOffsets("t")
		req.SetVersion(version)
		req.Topics[0].Partitions[0].Timestamp = timestamp
		return requestAt(t, c, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	for _, tc := range []struct {
		version       int16
		timestamp     int64
		code          int16
		offset, found int64
	}{
		{7, -3, 0, 1, 5000},
		{7, -1, 0, 6, -1},
		{7, -2, 0, 0, -1},
		{7, 2500, 0, 1, 5000},
		{7, 4500, 0, 1, 5000},
		{6, 2000, 0, 1, 5000},
		{6, -3, kerr.UnsupportedVersion.Code, -1, -1},
		{1, -3, kerr.UnsupportedVersion.Code, -1, -1},
		{7, -4, kerr.UnsupportedVersion.Code, -1, -1},
		{7, -7, kerr.UnsupportedVersion.Code, -1, -1},
	} {
		p := query(tc.version, tc.timestamp)
		if p.ErrorCode != tc.code || p.Offset != tc.offset || p.Timestamp != tc.found {
			t.Errorf("v%d timestamp %d: error %d, offset %d, timestamp %d; want error %d, offset %d, timestamp %d",
				tc.version, tc.timestamp, p.ErrorCode, p.Offset, p.Timestamp, tc.code, tc.offset, tc.found)
		}
	}

	// An empty partition has no largest timestamp.
	createTopic(t, cl, "empty", 1)
	req := newListOffsets("empty")
	req.SetVersion(7)
	req.Topics[0].Partitions[0].Timestamp = -3
	if p := requestAt(t, c, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 {
		t.Errorf("-3 on an empty partition: error %d, offset %d; want offset -1", p.ErrorCode, p.Offset)
	}
}
