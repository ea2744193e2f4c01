package logd

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestCopiedFetchBytesBounded: connections that do not read their
// answers hold the record sets copied into them (no sendfile, or past
// MaxFetchFiles) for up to IdleTimeout; over all connections those
// bytes stay within MaxCopiedFetchBytes. Each of 16 connections has an
// acks=all produce waiting for its fsync (held by the test), so the
// answer of the Fetch behind it waits unwritten, as a client's that
// does not read: all 16 answers are held at once, and their record
// bytes must fit the bound. 16 answers of 2 MiB were held before, on a
// bound of 5 MiB. Fetches that find the bound used up are answered with
// less, or with nothing after their MaxWait, counted.
func TestCopiedFetchBytesBounded(t *testing.T) {
	const (
		conns  = 16
		limit  = 5 << 20
		levels = 4 // batches in the partition: each answer wants 2 MiB
	)
	for _, tc := range []struct {
		name  string
		setup func(*Config)
		copy  bool
	}{
		{"no sendfile", func(*Config) {}, true},
		{"past MaxFetchFiles", func(c *Config) { c.MaxFetchFiles = 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, gate := copiedServer(t, limit, levels, tc.copy, tc.setup)
			fetches := func() uint64 { return handledCount(ts, kmsg.Fetch) }

			entered := gate.close()
			t.Cleanup(gate.open)
			c0 := dial(t, ts.addr)
			sendProduce(t, c0, 1, "p", recordBatch([]byte("a")))
			<-entered // the first produce's fsync waits: every later one's answer too
			fetch := wholeFetch()
			fetch.MaxWaitMillis = 200
			dials := append(make([]net.Conn, 0, conns), c0)
			for i := 1; i < conns; i++ {
				c := dial(t, ts.addr)
				sendProduce(t, c, 1, "p", recordBatch([]byte("a")))
				dials = append(dials, c)
			}
			for _, c := range dials {
				if err := writeRequestCorr(c, 2, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
					t.Fatal(err)
				}
			}
			waitUntil(t, "every connection's fetch answered, unwritten", func() bool { return fetches() == conns })
			gate.open()
			var records int64
			for i, c := range dials {
				for range 2 { // the produce's answer, then the fetch's
					frame, err := readFrame(c)
					if err != nil {
						t.Fatalf("connection %d: %v", i, err)
					}
					if corr := int32(frame[0])<<24 | int32(frame[1])<<16 | int32(frame[2])<<8 | int32(frame[3]); corr != 2 {
						continue
					}
					resp := kmsg.NewPtrFetchResponse()
					resp.SetVersion(fetch.GetVersion())
					if err := resp.ReadFrom(frame[4:]); err != nil {
						t.Fatal(err)
					}
					records += int64(len(resp.Topics[0].Partitions[0].RecordBatches))
				}
			}
			copied := records - int64(ts.metrics.fetchZeroCopy.Load())
			t.Logf("%d unwritten answers held %d KiB of records, %d KiB copied; %d reads cut, %d refused a descriptor", conns, records>>10, copied>>10, ts.metrics.fetchCopiedCut.Load(), ts.metrics.fetchFilesRefused.Load())
			if copied > limit {
				t.Fatalf("%d unwritten fetch answers held %d KiB of copied records at once, bound %d KiB", conns, copied>>10, limit>>10)
			}
			if copied < limit-2*copiedBatch {
				t.Errorf("%d KiB copied, want the bound used (%d KiB) less a batch or two", copied>>10, limit>>10)
			}
			if ts.metrics.fetchCopiedCut.Load() == 0 {
				t.Error("no read counted as cut")
			}
			waitUntil(t, "copied bytes given back", func() bool { return ts.copied.used.Load() == 0 })
		})
	}
}

// copiedBatch is the size of the record batches copiedServer appends.
const copiedBatch = 512 << 10

// copiedServer starts a server whose fsyncs gate holds when closed,
// bounding copied fetch bytes at limit, with levels batches of
// copiedBatch bytes in partition 0 of topic "f" and a topic "p" to
// produce to; copy turns sendfile off.
func copiedServer(t *testing.T, limit, levels int, copy bool, setup func(*Config)) (*testServer, *gateFS) {
	t.Helper()
	return gatedServer(t, levels, copy, func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.MaxFetchBytes = 4 << 20
		c.MaxCopiedFetchBytes = limit
		setup(c)
	})
}

// gatedServer starts a server whose fsyncs gate holds when closed, with
// levels batches of copiedBatch bytes in partition 0 of topic "f" and a
// topic "p" to produce to; copy turns sendfile off.
func gatedServer(t *testing.T, levels int, copy bool, setup func(*Config)) (*testServer, *gateFS) {
	t.Helper()
	gate := &gateFS{FS: vfs.OS}
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Storage.FS = gate
		c.IdleTimeout = time.Hour
		c.DisableAutoCreateTopics = true
		setup(c)
	})
	ts.noZeroCopy.Store(copy)
	for _, topic := range []string{"p", "f"} {
		if err := ts.autoCreate(topic); err != nil {
			t.Fatal(err)
		}
	}
	f, err := ts.store.Partition("f", 0)
	if err != nil {
		t.Fatal(err)
	}
	appendBatches(t, f, levels, copiedBatch)
	return ts, gate
}

// wholeFetch is a Fetch of partition 0 of topic "f" from its start,
// as much as the server answers.
func wholeFetch() *kmsg.FetchRequest {
	fetch := fetchPartitions("f", nil, []int32{0})
	fetch.Topics[0].Partitions[0].PartitionMaxBytes = 1 << 30
	return fetch
}

// holdFetchAnswers closes gate (opened again when the test ends) and
// leaves holders answers of fetch unwritten: on each of holders new
// connections to ts, an acks=all produce whose fsync gate holds, then
// fetch, answered behind it. It returns those connections.
func holdFetchAnswers(t *testing.T, ts *testServer, gate *gateFS, fetch *kmsg.FetchRequest, holders int) []net.Conn {
	t.Helper()
	entered := gate.close()
	t.Cleanup(gate.open)
	var held []net.Conn
	for i := range holders {
		c := dial(t, ts.addr)
		sendProduce(t, c, 1, "p", recordBatch([]byte("a")))
		if i == 0 {
			<-entered
		}
		if err := writeRequestCorr(c, 2, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		waitUntil(t, "the fetch answered, unwritten", func() bool { return handledCount(ts, kmsg.Fetch) == uint64(i+1) })
	}
	return held
}

// handledCount is how many requests of key the server has answered.
func handledCount(ts *testServer, key kmsg.Key) uint64 {
	ts.metrics.mu.Lock()
	defer ts.metrics.mu.Unlock()
	if st := ts.metrics.requests[key.Int16()]; st != nil {
		return st.count
	}
	return 0
}

// TestCopiedFetchWaitsForBytes: a Fetch that finds the copied bytes used
// up by answers not written, and so has nothing to answer, waits within
// its MaxWait (a minute here) and is answered with records as soon as
// those answers are written and their bytes come back.
func TestCopiedFetchWaitsForBytes(t *testing.T) {
	const holders = 3 // 2 MiB, 2 MiB, then one 512 KiB batch: what is left holds no batch
	ts, gate := copiedServer(t, 5<<20, 4, true, func(*Config) {})
	fetch := wholeFetch()
	held := holdFetchAnswers(t, ts, gate, fetch, holders)
	cut := ts.metrics.fetchCopiedCut.Load()
	c := dial(t, ts.addr)
	fetch.MaxWaitMillis = 60_000
	if err := writeRequestCorr(c, 1, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the fetch cut", func() bool { return ts.metrics.fetchCopiedCut.Load() > cut })
	gate.open()
	for _, h := range held {
		h.Close()
	}
	frame, err := readFrame(c) // within 5 s, not the fetch's minute
	if err != nil {
		t.Fatalf("the fetch waiting for copied bytes was not answered once they came back: %v", err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(fetch.GetVersion())
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	if n := len(resp.Topics[0].Partitions[0].RecordBatches); n == 0 {
		t.Fatal("the fetch was answered without records")
	}
}

// TestCopiedFetchWaitsQuietly: a long poll whose read was cut, with
// fewer than MinBytes to answer, waits for bytes to come back from other
// answers, not from its own earlier pass: it used to give back its own
// bytes at each pass and so wake itself, reading again and again until
// its MaxWait (every pass counted as a cut read).
func TestCopiedFetchWaitsQuietly(t *testing.T) {
	const holders = 2 // 4 MiB held: 1.6 MiB left, three batches of the four
	ts, gate := copiedServer(t, 5<<20+600<<10, 4, true, func(*Config) {})
	fetch := wholeFetch()
	holdFetchAnswers(t, ts, gate, fetch, holders)
	cut := ts.metrics.fetchCopiedCut.Load()
	c := dial(t, ts.addr)
	fetch.MaxWaitMillis, fetch.MinBytes = 500, 10<<20
	if err := writeRequestCorr(c, 1, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the long poll's first read cut", func() bool { return ts.metrics.fetchCopiedCut.Load() > cut })
	if err := ts.autoCreate("wake"); err != nil { // wakes every long poll once
		t.Fatal(err)
	}
	if _, err := readFrame(c); err != nil {
		t.Fatal(err)
	}
	// A first pass, one when woken, and one at the end of MaxWait.
	if n := ts.metrics.fetchCopiedCut.Load() - cut; n > 3 {
		t.Fatalf("the long poll read %d times while nothing came back", n)
	}
}

// TestCopiedFetchWaitersFirstComeFirstServed: fetches waiting for
// copied bytes are served in the order they came: a Fetch arriving
// while an earlier one waits takes no copied bytes before it. Here the
// earlier one (A) waits for a 512 KiB batch, more than the bytes left;
// a later one (B) for a small batch that fits what is left. B used to
// take those bytes at once: a stream of such fetches could keep A
// waiting, woken and losing, until its MaxWait. Now B waits behind A,
// and both are answered, A first, once the held answers are written.
func TestCopiedFetchWaitersFirstComeFirstServed(t *testing.T) {
	ts, gate, held, send := copiedLine(t)
	a := send(wholeFetch(), 60_000)
	b := send(fetchPartitions("s", nil, []int32{0}), 60_000)
	if n := handledCount(ts, kmsg.Fetch); n > holdersInLine {
		t.Fatalf("a Fetch arriving while another waited for copied bytes was answered first (%d fetches answered, %d held)", n, holdersInLine)
	}
	gate.open()
	for _, h := range held {
		h.Close()
	}
	if fetchedRecords(t, a) == 0 {
		t.Fatal("the first waiter was answered without records")
	}
	if fetchedRecords(t, b) == 0 {
		t.Fatal("the later one was answered without records")
	}
}

// TestCopiedFetchLineMovesOn: a fetch first in line for copied bytes
// that leaves it without taking any (its MaxWait over) wakes the next,
// which reads the bytes left if its batch fits them, at once, not at
// the next bytes to come back (here none: the held answers stay held).
func TestCopiedFetchLineMovesOn(t *testing.T) {
	ts, _, _, send := copiedLine(t)
	a := send(wholeFetch(), 300)
	b := send(fetchPartitions("s", nil, []int32{0}), 60_000)
	if n := handledCount(ts, kmsg.Fetch); n > holdersInLine {
		t.Fatalf("a Fetch arriving while another waited for copied bytes was answered first (%d fetches answered, %d held)", n, holdersInLine)
	}
	if fetchedRecords(t, a) != 0 {
		t.Fatal("the first waiter got records from bytes still held")
	}
	if fetchedRecords(t, b) == 0 { // readFrame's 5 s, not B's minute
		t.Fatal("the next in line was answered without records")
	}
}

// holdersInLine is how many fetch answers copiedLine holds unwritten.
const holdersInLine = 3 // 2 MiB, 2 MiB, then one 512 KiB batch: what is left holds no such batch

// copiedLine starts a copiedServer of 5 MiB of copied bytes, with a
// topic "s" of one small batch, and holds holdersInLine whole fetch
// answers of "f" unwritten (the connections are returned). send sends a
// fetch with maxWait on a new connection and waits until it is cut or
// answered. prepare, if any, runs before the answers are held (appends
// wait for their fsync, which the held answers' gate holds).
func copiedLine(t *testing.T, prepare ...func(*testServer)) (*testServer, *gateFS, []net.Conn, func(*kmsg.FetchRequest, int32) net.Conn) {
	ts, gate := copiedServer(t, 5<<20, 4, true, func(*Config) {})
	if err := ts.autoCreate("s"); err != nil {
		t.Fatal(err)
	}
	small, err := ts.store.Partition("s", 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := small.Append(recordBatch([]byte("small")))
	if err != nil {
		t.Fatal(err)
	}
	if err := small.WaitAppended(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	for _, f := range prepare {
		f(ts)
	}
	held := holdFetchAnswers(t, ts, gate, wholeFetch(), holdersInLine)
	sent := 0
	send := func(fetch *kmsg.FetchRequest, maxWait int32) net.Conn {
		cut := ts.metrics.fetchCopiedCut.Load()
		c := dial(t, ts.addr)
		fetch.MaxWaitMillis = maxWait
		if err := writeRequestCorr(c, 1, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		sent++
		waitUntil(t, "the fetch cut or answered", func() bool {
			return ts.metrics.fetchCopiedCut.Load() > cut || handledCount(ts, kmsg.Fetch) >= uint64(holdersInLine+sent)
		})
		return c
	}
	return ts, gate, held, send
}

// fetchedRecords reads a Fetch v11 answer from c and returns the size
// of its first partition's records.
func fetchedRecords(t *testing.T, c net.Conn) int {
	t.Helper()
	frame, err := readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	return len(resp.Topics[0].Partitions[0].RecordBatches)
}

// TestCopiedFetchLineWakesNewFirst: a fetch whose read was cut while
// another was first in line, and which joins the line after that one
// left it (its MaxWait over, or its read no longer cut) without
// returning any bytes, is first with the bytes free: it reads again at
// once. Its read found none available (not first), the leave woke no
// one (it was not in line yet), and no put came: it waited for its own
// MaxWait, and every fetch behind it (new ones too, not first) with it.
func TestCopiedFetchLineWakesNewFirst(t *testing.T) {
	c := &copiedBytes{limit: 1 << 20}
	var a, b copyTurn
	_ = c.wait(&b, c.returned()) // b waits in line, first
	since := c.returned()        // a's pass starts
	if n := c.available(&a); n != 0 {
		t.Fatalf("a, not first in line, may take %d bytes", n)
	}
	c.leave(&b) // b leaves during a's read
	select {
	case <-c.wait(&a, since):
	case <-time.After(time.Second):
		t.Fatalf("a, first in line after b left during its read, with %d bytes free, was not woken", c.available(&a))
	}
	if n := c.available(&a); n != 1<<20 {
		t.Fatalf("a, first in line, may take %d bytes, want %d", n, 1<<20)
	}
	c.leave(&a)
	if c.line.Len() != 0 {
		t.Fatalf("%d fetches left in line", c.line.Len())
	}
	// A put during the read of a fetch not yet in line (the line empty,
	// it woke no one): the fetch, first once it waits, reads again at
	// once (the missed-return check, untested before).
	if !c.take(1<<20, nil) {
		t.Fatal("no bytes to take")
	}
	since = c.returned()
	if n := c.available(&a); n != 0 {
		t.Fatalf("%d bytes available, all taken", n)
	}
	c.put(1 << 20)
	select {
	case <-c.wait(&a, since):
	case <-time.After(time.Second):
		t.Fatalf("a, first in line, bytes given back during its read, was not woken")
	}
	c.leave(&a)
}

// TestCopiedFetchWholeReadNotInLine: a long poll (MinBytes not reached)
// that read all its partition holds is not waiting for copied bytes,
// even when fewer are left than its PartitionMaxBytes: it does not take
// a place in line, where, first, it kept every fetch behind it from
// reading until its MaxWait. Here A reads the one small batch of "s"
// with 512 KiB or less left of the copied bytes and waits for more
// records; B, a fetch of that batch, is answered at once.
func TestCopiedFetchWholeReadNotInLine(t *testing.T) {
	ts, _, _, send := copiedLine(t)
	long := fetchPartitions("s", nil, []int32{0})
	long.MinBytes = 10 << 20
	a := passedByAFetch(t, ts, send, long, "that read its whole partition")
	if n := fetchedRecords(t, a); n == 0 { // at its MaxWait
		t.Fatal("the long poll was answered without its batch")
	}
}

// passedByAFetch sends long, a long poll, then a fetch of "s" that fits
// the copied bytes left, and checks that one is answered at once: the
// long poll, what names how it read, took no place in line ahead of
// it. It returns long's connection, answered at its MaxWait.
func passedByAFetch(t *testing.T, ts *testServer, send func(*kmsg.FetchRequest, int32) net.Conn, long *kmsg.FetchRequest, what string) net.Conn {
	t.Helper()
	a := send(long, 3000)
	b := send(fetchPartitions("s", nil, []int32{0}), 60_000)
	start := time.Now()
	_ = b.SetReadDeadline(start.Add(1500 * time.Millisecond))
	var size [4]byte
	if _, err := b.Read(size[:1]); err != nil {
		t.Fatalf("a Fetch of a batch that fits the copied bytes left, behind a long poll %s: %v (%v after it was sent; %d in line)", what, err, time.Since(start).Round(time.Millisecond), lineLen(ts))
	}
	return a
}

// appendBatches appends n batches of one record of size bytes to p and
// waits until they are appended.
func appendBatches(t *testing.T, p *storage.Log, n, size int) {
	t.Helper()
	for range n {
		res, err := p.Append(recordBatch(make([]byte, size)))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WaitAppended(context.Background(), res); err != nil {
			t.Fatal(err)
		}
	}
}

func lineLen(ts *testServer) int {
	ts.copied.mu.Lock()
	defer ts.copied.mu.Unlock()
	return ts.copied.line.Len()
}

// TestSendfileFetchTakesNoCopiedLock: a fetch whose record sets are
// sent from the segment files takes nothing from copiedBytes, and must
// not take its mutex either (every fetch would contend on it): with
// copiedBytes' mutex held, it is answered.
func TestSendfileFetchTakesNoCopiedLock(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("record sets are sent from files only on Linux")
	}
	ts := startServer(t, t.TempDir(), func(c *Config) {})
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "z", 1)
	produceBatch(t, cl, "z", recordBatch(make([]byte, 4<<10)))
	c := dial(t, ts.addr)
	fetch := fetchPartitions("z", nil, []int32{0})
	fetch.MaxWaitMillis = 100
	if err := writeRequestCorr(c, 1, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if n := fetchedRecords(t, c); n == 0 { // its batches checked: later reads are sent from the file
		t.Fatal("no records fetched")
	}
	sent := ts.metrics.fetchZeroCopy.Load()
	ts.copied.mu.Lock()
	locked := true
	defer func() {
		if locked {
			ts.copied.mu.Unlock()
		}
	}()
	if err := writeRequestCorr(c, 2, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	var b [1]byte
	_, err := c.Read(b[:])
	locked = false
	ts.copied.mu.Unlock()
	if err != nil {
		t.Fatalf("a fetch sent from the segment files, copiedBytes' mutex held: %v", err)
	}
	waitUntil(t, "the fetch sent from the segment files", func() bool { return ts.metrics.fetchZeroCopy.Load() > sent })
}

// TestCopiedFetchSegmentEndNotInLine: a read that stops at the end of
// its segment (reads never span two) left nothing out for want of
// copied bytes, though records follow in the next segment: a long poll
// that read to there with fewer copied bytes left than its
// PartitionMaxBytes does not take a place in line, where, first, it
// kept every fetch behind it from reading until its MaxWait. Here A
// reads the first of two batches of "g", each in a segment of its own;
// B, a fetch of "s" that fits what is left, is answered at once.
func TestCopiedFetchSegmentEndNotInLine(t *testing.T) {
	ts, _, _, send := copiedLine(t, func(ts *testServer) {
		if err := ts.newTopic("g", 1, storage.TopicConfig{SegmentBytes: storage.MinSegmentBytes}); err != nil {
			t.Fatal(err)
		}
		g, err := ts.store.Partition("g", 0)
		if err != nil {
			t.Fatal(err)
		}
		appendBatches(t, g, 2, 800)
		if first, left, err := g.ReadAppendLeft(nil, 0, 1<<20); err != nil || len(first) > 1<<10 || left != 0 || g.HighWatermark() != 2 {
			t.Fatalf("the first read of g is not one batch of two, to its segment's end (%d bytes, %d left, %v; high watermark %d)", len(first), left, err, g.HighWatermark())
		}
	})
	long := fetchPartitions("g", nil, []int32{0})
	long.MinBytes = 10 << 20
	a := passedByAFetch(t, ts, send, long, "that read to its segment's end")
	if n := fetchedRecords(t, a); n == 0 { // at its MaxWait
		t.Fatal("the long poll was answered without its batch")
	}
}

// TestCopiedFetchLimitCutNotInLine: a read that left out a batch its
// PartitionMaxBytes would have left out too was not cut for want of
// copied bytes: a long poll that read so much does not take a place in
// line. Here A reads the first of two 300 KiB batches of "h", its
// PartitionMaxBytes 550 KiB, with 512 KiB or less of copied bytes
// left; B, a fetch of "s" that fits what is left, is answered at once.
func TestCopiedFetchLimitCutNotInLine(t *testing.T) {
	ts, _, _, send := copiedLine(t, func(ts *testServer) {
		if err := ts.autoCreate("h"); err != nil {
			t.Fatal(err)
		}
		h, err := ts.store.Partition("h", 0)
		if err != nil {
			t.Fatal(err)
		}
		appendBatches(t, h, 2, 300<<10)
	})
	long := fetchPartitions("h", nil, []int32{0})
	long.MinBytes = 10 << 20
	long.Topics[0].Partitions[0].PartitionMaxBytes = 550 << 10
	a := passedByAFetch(t, ts, send, long, "whose read its PartitionMaxBytes cut")
	if n := fetchedRecords(t, a); n == 0 || n > 550<<10 { // at its MaxWait
		t.Fatalf("the long poll was answered with %d bytes, want its first batch", n)
	}
}
