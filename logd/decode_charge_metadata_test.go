package logd

import (
	"strconv"
	"testing"
	"time"

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

// TestMetadataChargeNamedTopics: a Metadata request naming topics is
// answered with those topics only, so it is charged for their
// partitions, not for every partition the server holds: on a server of
// 2000 partitions with the least budget the configuration allows, one
// naming a 1-partition topic used to be charged for all 2000 (half the
// budget; all of it from 4000 partitions on) and so waited for them. Its charge
// still covers what answering it allocates, for a topic of 1000
// partitions named (even twice) and for the answers of unknown topics
// auto-created with DefaultPartitions (creating them allocates the
// store's state of the topic, bounded by MaxTopics, as a CreateTopics
// does: measured apart, by answering once more).
func TestMetadataChargeNamedTopics(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.MaxInFlightRequestBytes = 2 << 20
		c.DefaultPartitions = 100
	})
	cl := newClient(t, ts.addr)
	for _, topic := range []string{"meta-a", "meta-b"} {
		createTopic(t, cl, topic, 1000)
	}
	createTopic(t, cl, "small", 1)
	limit := ts.decodeMem.limit
	named := func(v int16, allow bool, topics ...string) []byte {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		req.AllowAutoTopicCreation = allow
		for _, topic := range topics {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(topic)})
		}
		return requestFrame(req)
	}
	for _, v := range []int16{0, 1, 4, 9} {
		charge, err := ts.decodeCharge(named(v, false, "small"))
		if err != nil {
			t.Fatal(err)
		}
		if charge > limit/8 {
			t.Errorf("Metadata v%d naming a 1-partition topic charged %d bytes, budget %d", v, charge, limit)
		}
	}
	// Most of the budget held: the small request is still answered.
	if err := ts.decodeMem.acquire(limit-limit/8, time.Now().Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("small")}}
	resp, err := requestWithin(cl, req)
	if err != nil {
		t.Fatalf("Metadata naming a 1-partition topic, 7/8 of the budget held: %v", err)
	}
	if got := resp.(*kmsg.MetadataResponse).Topics; len(got) != 1 || len(got[0].Partitions) != 1 {
		t.Fatalf("Metadata naming a 1-partition topic: answered %+v", got)
	}
	ts.decodeMem.release(limit - limit/8)
	if raceEnabled { // the race detector enlarges allocations
		return
	}
	for i, tc := range []struct {
		name string
		v    int16
		new  bool // the topics named are unknown, created
	}{
		{"a 1000-partition topic twice", 9, false},
		{"a 1000-partition topic twice", 1, false},
		{"two unknown topics, created", 9, true},
		{"two unknown topics, created", 1, true},
	} {
		topics := []string{"meta-a", "meta-a"}
		if tc.new {
			topics = []string{"new-" + strconv.Itoa(2*i), "new-" + strconv.Itoa(2*i+1)}
		}
		frame := named(tc.v, true, topics...)
		charge, err := ts.decodeCharge(frame)
		if err != nil {
			t.Fatal(err)
		}
		got := answerAllocated(t, ts, frame)
		if tc.new {
			got = answerAllocated(t, ts, frame) // created: now answered
		}
		if got > charge {
			t.Errorf("Metadata v%d naming %s: answering allocated %d, charged %d", tc.v, tc.name, got, charge)
		}
	}
}
