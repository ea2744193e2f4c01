package logd

import (
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// joinBody is a JoinGroup v3 of group g for member (empty: new) with
// the given rebalance timeout.
func joinBody(g, member string, rebalance time.Duration) []byte {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(3)
	req.Group, req.MemberID = g, member
	req.SessionTimeoutMillis = int32(time.Minute / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(min(rebalance/time.Millisecond, math.MaxInt32))
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	return req.AppendTo(nil)
}

// readJoin reads a JoinGroup v3 response from c.
func readJoin(t *testing.T, c net.Conn) *kmsg.JoinGroupResponse {
	t.Helper()
	frame, err := readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

// syncBody is a SyncGroup v2 of member in generation gen.
func syncBody(g, member string, gen int32) []byte {
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(2)
	req.Group, req.MemberID, req.Generation = g, member, gen
	return req.AppendTo(nil)
}

// stableGroup makes a group g of one member, on its own connection,
// with a rebalance timeout of days; it returns the connection and the
// member id.
func stableGroup(t *testing.T, ts *testServer, g string) (net.Conn, string) {
	t.Helper()
	a := dial(t, ts.addr)
	if err := writeRequest(a, kmsg.JoinGroup.Int16(), 3, joinBody(g, "", 24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	jr := readJoin(t, a)
	if jr.ErrorCode != 0 {
		t.Fatalf("first join: error %d", jr.ErrorCode)
	}
	if _, err := rawRequest(t, a, kmsg.SyncGroup.Int16(), 2, syncBody(g, jr.MemberID, jr.Generation)); err != nil {
		t.Fatal(err)
	}
	return a, jr.MemberID
}

func groupMembers(ts *testServer, g string) int {
	for _, info := range ts.groups.Groups() {
		if info.Group == g {
			return info.Members
		}
	}
	return 0
}

// TestJoinGroupAbandonedWhenClientCloses: a JoinGroup waiting for a
// rebalance (here for a member with a rebalance timeout of a day) whose
// client closes its socket is abandoned at once — the group no longer
// waits for it, and its connection (goroutine, MaxConnections and
// MaxConnectionsPerIP slots) is released — rather than at the end of
// the rebalance timeout.
func TestJoinGroupAbandonedWhenClientCloses(t *testing.T) {
	ts := startServer(t, t.TempDir())
	stableGroup(t, ts, "g")
	b := dial(t, ts.addr)
	if err := writeRequest(b, kmsg.JoinGroup.Int16(), 3, joinBody("g", "", time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second member waiting in JoinGroup", func() bool { return groupMembers(ts, "g") == 2 })
	b.Close()
	waitUntil(t, "the closed client's JoinGroup abandoned and its connection ended", func() bool {
		return ts.groups.Stats().Abandoned == 1 && ts.metrics.connections.Load() == 1 && ts.metrics.peerGone.Load() == 1
	})
}

// TestSyncGroupAbandonedWhenClientCloses: likewise a follower's
// SyncGroup waiting for its leader's assignment.
func TestSyncGroupAbandonedWhenClientCloses(t *testing.T) {
	ts := startServer(t, t.TempDir())
	a, aID := stableGroup(t, ts, "g")
	b := dial(t, ts.addr)
	if err := writeRequest(b, kmsg.JoinGroup.Int16(), 3, joinBody("g", "", 24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second member waiting in JoinGroup", func() bool { return groupMembers(ts, "g") == 2 })
	if err := writeRequest(a, kmsg.JoinGroup.Int16(), 3, joinBody("g", aID, 24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	ja, jb := readJoin(t, a), readJoin(t, b)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 {
		t.Fatalf("rejoin: errors %d and %d", ja.ErrorCode, jb.ErrorCode)
	}
	follower, j := b, jb
	if jb.LeaderID == jb.MemberID {
		follower, j = a, ja
	}
	if err := writeRequest(follower, kmsg.SyncGroup.Int16(), 2, syncBody("g", j.MemberID, j.Generation)); err != nil {
		t.Fatal(err)
	}
	// The follower's sync waits for the leader's, which never comes;
	// the request is read before the end of the stream, whenever the
	// server gets to it.
	follower.Close()
	waitUntil(t, "the closed client's SyncGroup abandoned and its connection ended", func() bool {
		return ts.groups.Stats().Abandoned == 1 && ts.metrics.connections.Load() == 1 && ts.metrics.peerGone.Load() == 1
	})
}

// TestPipelinedRequestKeepsJoinWaiting: bytes that arrive while a
// JoinGroup waits (the client's next request) do not end the wait: the
// join is answered when the rebalance completes, then the next
// request, in order.
func TestPipelinedRequestKeepsJoinWaiting(t *testing.T) {
	ts := startServer(t, t.TempDir())
	a, aID := stableGroup(t, ts, "g")
	b := dial(t, ts.addr)
	if err := writeRequest(b, kmsg.JoinGroup.Int16(), 3, joinBody("g", "", time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second member waiting in JoinGroup", func() bool { return groupMembers(ts, "g") == 2 })
	if err := writeRequestCorr(b, 7, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := writeRequest(a, kmsg.JoinGroup.Int16(), 3, joinBody("g", aID, 24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if jr := readJoin(t, a); jr.ErrorCode != 0 {
		t.Fatalf("A's rejoin: error %d", jr.ErrorCode)
	}
	if jr := readJoin(t, b); jr.ErrorCode != 0 || jr.Generation != 2 {
		t.Fatalf("B's join: error %d, generation %d", jr.ErrorCode, jr.Generation)
	}
	frame, err := readFrame(b)
	if err != nil || len(frame) < 4 || frame[3] != 7 {
		t.Fatalf("the pipelined ApiVersions: %v (%x)", err, frame[:min(len(frame), 8)])
	}
	if n := ts.groups.Stats().Abandoned + ts.metrics.peerGone.Load(); n != 0 {
		t.Fatalf("%d waits abandoned", n)
	}
}

// fetchBody is a Fetch v11 of partition 0 of topic from offset 0,
// waiting up to maxWait for MinBytes 1.
func fetchBody(topic string, maxWait time.Duration) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, int32(maxWait/time.Millisecond), 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.LogStartOffset = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req.AppendTo(nil)
}

// TestFetchAbandonedWhenClientCloses: a Fetch long-polling an empty
// partition (MaxWait 60 s) whose client closes its socket ends at once,
// and its connection with it: a new connection from the same address
// fits under MaxConnectionsPerIP=1 again.
func TestFetchAbandonedWhenClientCloses(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.MaxConnectionsPerIP = 1 })
	if err := ts.autoCreate("t"); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	if err := writeRequest(c, kmsg.Fetch.Int16(), 11, fetchBody("t", time.Minute)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the connection accepted", func() bool { return ts.metrics.connections.Load() == 1 })
	// The fetch waits for records that never come; the request is read
	// before the end of the stream, whenever the server gets to it.
	c.Close()
	waitUntil(t, "the closed client's fetch abandoned and its connection ended", func() bool {
		return ts.metrics.connections.Load() == 0 && ts.metrics.peerGone.Load() == 1
	})
	d := dial(t, ts.addr)
	if _, err := rawRequest(t, d, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
		t.Fatalf("a new connection from the same address: %v", err)
	}
}

// TestDurableProduceAbandonedWhenClientCloses: an acks=all produce
// waiting for its fsync (held here) is answered by the connection's
// writer while the reader reads on; a client that closes its socket
// meanwhile ends the wait at once, and its connection with it.
func TestDurableProduceAbandonedWhenClientCloses(t *testing.T) {
	gate := &gateFS{FS: vfs.OS}
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Storage.FS = gate; c.MaxConnectionsPerIP = 1 })
	if err := ts.autoCreate("p"); err != nil {
		t.Fatal(err)
	}
	entered := gate.close() // segment fsyncs block from here on
	t.Cleanup(gate.open)    // before the server closes (cleanups run last first)
	c := dial(t, ts.addr)
	sendProduce(t, c, 1, "p", recordBatch([]byte("a"))) // timeout 30 s
	<-entered
	c.Close()
	waitUntil(t, "the closed client's produce abandoned and its connection ended", func() bool {
		return ts.metrics.connections.Load() == 0 && ts.metrics.peerGone.Load() == 1
	})
	d := dial(t, ts.addr)
	if _, err := rawRequest(t, d, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
		t.Fatalf("a new connection from the same address: %v", err)
	}
}

// TestDurableProduceAnsweredOnHangUp: a connection the server hangs up
// on (here after a failed acks=0 produce) while an earlier acks=all
// produce waits for its fsync still gets that produce's true answer:
// the wait is not cut short, as it is when the client leaves.
func TestDurableProduceAnsweredOnHangUp(t *testing.T) {
	gate := &gateFS{FS: vfs.OS}
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Storage.FS = gate })
	if err := ts.autoCreate("p"); err != nil {
		t.Fatal(err)
	}
	entered := gate.close()
	t.Cleanup(gate.open)
	c := dial(t, ts.addr)
	sendProduce(t, c, 1, "p", recordBatch([]byte("a")))
	<-entered
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 0, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "p"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 5, recordBatch([]byte("b")) // no such partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := writeRequestCorr(c, 2, kmsg.Produce.Int16(), 7, req.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the failed acks=0 produce hanging up", func() bool { return ts.metrics.acksZeroHangUps.Load() == 1 })
	gate.open()
	b, err := readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	var r kmsg.ProduceResponse
	r.SetVersion(7)
	if err := r.ReadFrom(b[4:]); err != nil {
		t.Fatal(err)
	}
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("the acks=all produce: error %d, base offset %d, want 0, 0", p.ErrorCode, p.BaseOffset)
	}
	if n := ts.metrics.peerGone.Load(); n != 0 {
		t.Fatalf("%d clients counted gone", n)
	}
}

// TestJoinGroupAbandonedWhenClientClosesAfterPipelining: a request the
// client pipelines behind a waiting JoinGroup does not end the watch of
// its socket: a close after it still abandons the join at once.
func TestJoinGroupAbandonedWhenClientClosesAfterPipelining(t *testing.T) {
	ts := startServer(t, t.TempDir())
	stableGroup(t, ts, "g")
	b := dial(t, ts.addr)
	if err := writeRequest(b, kmsg.JoinGroup.Int16(), 3, joinBody("g", "", time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second member waiting in JoinGroup", func() bool { return groupMembers(ts, "g") == 2 })
	if err := writeRequestCorr(b, 7, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	waitUntil(t, "the closed client's JoinGroup abandoned and its connection ended", func() bool {
		return ts.groups.Stats().Abandoned == 1 && ts.metrics.connections.Load() == 1 && ts.metrics.peerGone.Load() == 1
	})
}
