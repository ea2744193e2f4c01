package logd

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heapInuse is the heap in use after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// claim opens a connection that announces a frame of claimed bytes and
// sends body bytes of it, then stalls.
func claim(t *testing.T, addr string, claimed uint32, body int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	buf := binary.BigEndian.AppendUint32(nil, claimed)
	buf = append(buf, make([]byte, body)...)
	go c.Write(buf) // may block in the kernel while the server waits for memory
	return c
}

// TestClaimedFrameMemory is the attack from issue 14: 80 connections each
// announce a frame of almost 100 MiB (the default MaxRequestBytes) and
// send 1,024 bytes of it. logd used to allocate the claimed size at once
// (80 × 100 MiB); now a frame buffer grows only as bytes arrive.
func TestClaimedFrameMemory(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.RequestTimeout = time.Minute })
	before := heapInuse()
	const conns = 80
	for range conns {
		claim(t, ts.addr, DefaultMaxRequestBytes-1, 1024)
	}
	waitUntil(t, "every connection reading its frame", func() bool {
		return ts.metrics.connections.Load() == conns && ts.reqMem.stats().used >= conns*1024
	})
	grown := int64(heapInuse()) - int64(before)
	t.Logf("heap in use grew %d KiB for %d connections claiming %d MiB each", grown>>10, conns, DefaultMaxRequestBytes>>20)
	if grown > 16<<20 {
		t.Fatalf("heap in use grew %d MiB for %d stalled 1 KiB requests", grown>>20, conns)
	}
}

// TestRequestMemoryBound: connections that really send large frames,
// but never finish them, hold at most MaxInFlightRequestBytes together;
// the others wait, and at the request deadline all are closed, the
// memory comes back and a client is served.
func TestRequestMemoryBound(t *testing.T) {
	const (
		limit   = 4 << 20
		conns   = 64
		claimed = 1 << 20
		sent    = 900 << 10
	)
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = claimed
		c.MaxInFlightRequestBytes = limit
		c.RequestTimeout = 2 * time.Second
	})
	before := heapInuse()
	for range conns {
		claim(t, ts.addr, claimed, sent)
	}
	// Settled: most connections have had to wait for memory (or, were
	// the bound broken, all of them hold their frames). Counted by the
	// waits begun, not those under way or expired: at RequestTimeout
	// the holders' requests end as the first waits would expire, and a
	// waiter granted the memory they free, then timed out at once
	// itself, is neither (a loaded machine left the waiting and expired
	// below the mark for good).
	waitUntil(t, "connections waiting for request memory", func() bool {
		st := ts.reqMem.stats()
		return int(st.waits) >= conns-2*limit/claimed || st.used >= conns*sent
	})
	st := ts.reqMem.stats()
	grown := int64(heapInuse()) - int64(before)
	t.Logf("%d of %d connections waiting, %d KiB of request memory held, heap in use grew %d KiB", st.waiting, conns, st.used>>10, grown>>10)
	if st.used > limit {
		t.Fatalf("request memory %d over its limit %d", st.used, limit)
	}
	// Frames within the budget, buffers the pool keeps, read buffers.
	if bound := int64(limit + maxPooledBytes + 8<<20); grown > bound {
		t.Fatalf("heap in use grew %d MiB, bound %d MiB", grown>>20, bound>>20)
	}
	waitUntil(t, "stalled requests timed out", func() bool {
		st := ts.reqMem.stats()
		return st.used == 0 && st.waiting == 0 && ts.metrics.slowRequests.Load() == conns
	})
	if st := ts.reqMem.stats(); st.expired == 0 {
		t.Fatalf("no wait for request memory expired: %+v", st)
	}
	cl := newClient(t, ts.addr, kgo.AllowAutoTopicCreation())
	produceN(t, cl, "after", "v", 10)
}

// TestFetchBufferFollowsUse: a connection's fetch buffer is sized by
// what its last fetch used, not by the largest buffer it ever grew. After
// one fetch of 12 MiB, empty fetches on the same connection must not
// each allocate (or, long-polling, hold) a buffer of that size.
func TestFetchBufferFollowsUse(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr, kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := make([]byte, 900<<10)
	rand.Read(value)
	const records = 14
	for range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "big", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	fetch := func(offset int64) int {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 64<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "big"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 64<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("fetch at %d: error %d", offset, p.ErrorCode)
		}
		return len(p.RecordBatches)
	}
	if n := fetch(0); n < records*len(value) {
		t.Fatalf("the big fetch read %d bytes, want all %d records", n, records)
	}
	for range 4 { // the first on each connection (kgo has more than one) may start large
		fetch(records)
	}
	const empty = 40
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range empty {
		if n := fetch(records); n != 0 {
			t.Fatalf("fetch at the end read %d bytes", n)
		}
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d empty fetches after a %d KiB one allocated %d KiB", empty, records*len(value)>>10, allocated>>10)
	if allocated > 4<<20 {
		t.Fatalf("%d empty fetches allocated %d MiB: each still takes a buffer as large as the big fetch's", empty, allocated>>20)
	}
}

// TestGroupMetadataBounded: JoinGroup protocol metadata (up to 1 MiB a
// member, kept up to the session timeout) is held within MaxGroupBytes
// over all groups; joins past it are refused with
// COORDINATOR_NOT_AVAILABLE. One connection's 256 joins once held
// 260 MiB on a server whose request memory is bounded at 4 MiB.
func TestGroupMetadataBounded(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 2 << 20
		c.MaxInFlightRequestBytes = 4 << 20
		c.MaxGroupBytes = 8 << 20
	})
	c := dial(t, ts.addr)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("joiner"))
	meta := make([]byte, 1<<20-128) // with its member ID, client ID and host, under 1 MiB
	joined, refused := 0, 0
	for i := range 16 {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(1)
		req.Group = fmt.Sprintf("g%d", i)
		req.SessionTimeoutMillis = 30 * 60 * 1000
		req.RebalanceTimeoutMillis = 60000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "x", meta
		req.Protocols = append(req.Protocols, p)
		if _, err := c.Write(f.AppendRequest(nil, req, int32(i))); err != nil {
			t.Fatal(err)
		}
		frame, err := readFrame(c)
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.SetVersion(1)
		if err := resp.ReadFrom(frame[4:]); err != nil {
			t.Fatal(err)
		}
		switch resp.ErrorCode {
		case 0:
			joined++
		case kerr.CoordinatorNotAvailable.Code:
			refused++
		default:
			t.Fatalf("join %d: error %d", i, resp.ErrorCode)
		}
	}
	if joined != 8 || refused != 8 {
		t.Errorf("%d joins of 1 MiB taken, %d refused; want 8 and 8 (MaxGroupBytes 8 MiB)", joined, refused)
	}
	if st := ts.groups.Stats(); st.OverBudget != uint64(refused) {
		t.Errorf("OverBudget %d, want %d", st.OverBudget, refused)
	}
}
