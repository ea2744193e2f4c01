package main

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestRecorderFlowTag: `mcast record --flow-tag 7` (a child process)
// reports tag 7, so a feed with flow control tagged 7 that waits for one
// such receiver before its first message waits for the recorder. The
// feed publishes 200,000 64-byte messages (50,000 under the race
// detector) as fast as it can through a retransmit window of 64
// datagrams, about 1,000 messages, far more than the recorder's socket
// buffer holds (4 MiB, about 45,000): without flow control the recorder
// falls behind and loses what leaves the window (tried: 147,188 records
// in the archive, gap markers among them, instead of 200,000). With it,
// the archive holds every message, in order, and no gap marker. Without
// the flag, the feed waits for a receiver that never reports, until the
// test's deadline.
func TestRecorderFlowTag(t *testing.T) {
	n := 200_000
	if raceEnabled {
		n = 50_000
	}
	addr := startTestLogd(t)
	group := testGroup()
	rec := startChild(t, "piping ", "mcast", "record", "--group", group, "--to", "logd://"+addr+"/flow", "--flow-tag", "7")
	pub, err := multicast.NewPublisher(context.Background(), multicast.Config{
		Group: netip.MustParseAddrPort(group), Interface: "lo", HostOnly: true, Feed: 1,
		Sender: reliable.SenderConfig{WindowDatagrams: 64, WindowBytes: 64 * reliable.DefaultMTU, MaxQueued: 16, MaxMessageSize: 4096,
			Flow: reliable.FlowConfig{Mode: reliable.FlowTagged, Tag: 7, MinReceivers: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	payload := make([]byte, 64)
	for i := range n {
		if err := pub.Publish(ctx, transport.Message{Payload: payload}); err != nil {
			t.Fatalf("publishing message %d: %v (is the recorder reporting tag 7?)", i+1, err)
		}
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	var recs []record
	for deadline := time.Now().Add(30 * time.Second); ; {
		if recs = readTopic(t, addr, "flow"); len(recs) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the archive until the recorder has written it all
	}
	rec.stop(t)
	if len(recs) != n {
		t.Fatalf("the archive holds %d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if r.marker || r.seq != uint64(i+1) {
			t.Fatalf("record %d: sequence %d, gap marker %v (%v); want the message of sequence %d", i, r.seq, r.marker, r.gap, i+1)
		}
	}
	if s := pub.Stats(); s.FlowReceivers != 1 {
		t.Fatalf("flow control saw %d receivers with tag 7, want 1 (the recorder)", s.FlowReceivers)
	}
}

// TestRecorderFlowTagBad: --flow-tag 0 is refused: one line, exit
// status 2, before anything starts.
func TestRecorderFlowTagBad(t *testing.T) {
	code, out, errOut := runCLI(t, "", "mcast", "record", "--group", "239.255.1.2:7000", "--to", "logd://127.0.0.1:9092/t", "--flow-tag", "0")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "--flow-tag 0: want 1 to 2^63") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 saying --flow-tag 0: want 1 to 2^63", code, out, errOut)
	}
}
