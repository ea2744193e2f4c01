package logd

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataChargeCoversPartitions: a Metadata request for all topics
// is a frame of a few bytes whose answer lists every partition the
// server holds. What decoding, handling and encoding it allocates is
// within its charge, which counts those partitions, not its frame. With
// the least budget the configuration allows (2 MiB), less than those
// partitions' cost, the request is still answered: its charge is at most
// the budget.
func TestMetadataChargeCoversPartitions(t *testing.T) {
	if raceEnabled { // the race detector enlarges allocations
		t.Skip("allocations measured without the race detector")
	}
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.DisableAutoCreateTopics = true
		c.MaxRequestBytes = 1 << 20
		c.MaxInFlightRequestBytes = 2 << 20
	})
	cl := newClient(t, ts.addr)
	for _, topic := range []string{"meta-a", "meta-b", "meta-c", "meta-d", "meta-e"} {
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
		frame := requestFrame(req)
		charge, err := ts.decodeCharge(frame)
		if err != nil {
			t.Fatal(err)
		}
		if got := answerAllocated(t, ts, frame); got > charge {
			t.Errorf("Metadata v%d for all of 5000 partitions: answering %d bytes allocated %d, charged %d", v, len(frame), got, charge)
		}
	}
	// kgo sends its own version: a request for all topics (nil).
	req := kmsg.NewPtrMetadataRequest()
	resp, err := requestWithin(cl, req)
	if err != nil {
		t.Fatalf("Metadata for all of 5000 partitions, budget %d: %v", ts.decodeMem.limit, err)
	}
	if got := len(resp.(*kmsg.MetadataResponse).Topics); got != 5 {
		t.Fatalf("Metadata: %d topics answered, want 5", got)
	}
}
