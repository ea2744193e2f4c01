package logd

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataChargeCoversPartitions: a Metadata request for all topics
// is a frame of a few bytes whose answer lists every partition the
// server holds. What decoding, handling and encoding it allocates is
// within its charge, which counts those partitions, not its frame.
func TestMetadataChargeCoversPartitions(t *testing.T) {
	if raceEnabled { // the race detector enlarges allocations
		t.Skip("allocations measured without the race detector")
	}
	ts := startServer(t, t.TempDir(), func(c *Config) { c.DisableAutoCreateTopics = true })
	cl := newClient(t, ts.addr)
	for _, topic := range []string{"meta-a", "meta-b", "meta-c", "meta-d"} {
		createTopic(t, cl, topic, 1000)
	}
	for _, v := range []int16{0, 1, 4, 9} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		if v == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{} // v0: empty means all
		} else {
			req.Topics = nil
		}
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 1)[4:]
		charge, err := ts.decodeCharge(frame)
		if err != nil {
			t.Fatal(err)
		}
		got := allocated(func() {
			dreq, err := decodeRequest(frame)
			if err != nil {
				t.Error(err)
				return
			}
			if resp, err := ts.handle(&client{}, dreq); err == nil && resp != nil {
				appendResponse(nil, 1, resp)
			}
		})
		if got > charge {
			t.Errorf("Metadata v%d for all of 4000 partitions: answering %d bytes allocated %d, charged %d", v, len(frame), got, charge)
		}
	}
}
