package logd

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHeldProduceKeepsCharge: an acks=all Produce waiting for its fsync
// is answered later, its response (one element per partition named,
// here 50000, 49999 of them errors) kept until the writer encodes it:
// the request memory charged for answering it (decodeCharge) stays
// taken until then, and comes back once it is written. It was given
// back when the produce was handed to the writer, so connections
// pipelining such produces held answers the budget no longer counted.
func TestHeldProduceKeepsCharge(t *testing.T) {
	ts, gate := copiedServer(t, 8<<20, 0, false, func(*Config) {})
	entered := gate.close()
	t.Cleanup(gate.open)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "p"
	rt.Partitions = make([]kmsg.ProduceRequestTopicPartition, 50000)
	for i := range rt.Partitions {
		rt.Partitions[i].Partition = int32(i)
	}
	rt.Partitions[0].Records = recordBatch([]byte("a"))
	req.Topics = append(req.Topics, rt)
	body := req.AppendTo(nil)
	c := dial(t, ts.addr)
	if err := writeRequestCorr(c, 1, kmsg.Produce.Int16(), 7, body); err != nil {
		t.Fatal(err)
	}
	<-entered
	// Handled only once the produce is handed to the writer.
	api := kmsg.NewPtrApiVersionsRequest()
	if err := writeRequestCorr(c, 2, kmsg.ApiVersions.Int16(), 0, api.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the ApiVersions behind the produce handled", func() bool { return handledCount(ts, kmsg.ApiVersions) == 1 })
	frame := append([]byte{0, 0, 0, 7, 0, 0, 0, 1, 0, 4, 't', 'e', 's', 't'}, body...)
	charge, err := decodeCharge(frame)
	if err != nil {
		t.Fatal(err)
	}
	if used := ts.decodeMem.stats().used; used < charge {
		t.Fatalf("an acks=all produce of %d partitions waits for its fsync, its answer not encoded: request memory holds %d bytes, its charge is %d", len(rt.Partitions), used, charge)
	}
	gate.open()
	for range 2 {
		if _, err := readFrame(c); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "request memory given back", func() bool { return ts.reqMem.stats().used == 0 && ts.decodeMem.stats().used == 0 })
}
