package faultnet

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"
)

var _ net.Conn = (*Conn)(nil)

func TestStreamFaultsValidate(t *testing.T) {
	tests := []struct {
		f     StreamFaults
		field string
	}{
		{StreamFaults{Delay: time.Second, MaxChunk: 3, CutAfter: 10}, ""},
		{StreamFaults{Delay: -1}, "Delay"},
		{StreamFaults{MaxChunk: -1}, "MaxChunk"},
		{StreamFaults{CutAfter: -1}, "CutAfter"},
	}
	for _, tt := range tests {
		checkFaultsError(t, tt.f.validate(), tt.field)
		if tt.field != "" {
			_, err := NewConn(nil, tt.f)
			checkFaultsError(t, err, tt.field)
		}
	}
}

// tcpPair returns the two ends of a TCP connection on 127.0.0.1, closed
// when the test ends.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

func mustConn(t *testing.T, c net.Conn, f StreamFaults) *Conn {
	t.Helper()
	fc, err := NewConn(c, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fc.Close() })
	return fc
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// readAll reads c until an error, returning the bytes and the error.
func readAll(t *testing.T, c net.Conn) ([]byte, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return got, err
		}
	}
}

func TestConnChunkingPreservesBytes(t *testing.T) {
	for _, maxChunk := range []int{1, 7, 4096} {
		client, server := tcpPair(t)
		sc := mustConn(t, server, StreamFaults{Seed: int64(maxChunk), MaxChunk: maxChunk})
		data := randomBytes(64 << 10)
		go func() {
			client.Write(data)
			client.Close()
		}()
		var got []byte
		sizes := map[int]bool{}
		buf := make([]byte, 32<<10)
		sc.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			n, err := sc.Read(buf)
			if n > maxChunk {
				t.Fatalf("MaxChunk %d: Read returned %d bytes", maxChunk, n)
			}
			sizes[n] = true
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("MaxChunk %d: read %d bytes differing from the %d written", maxChunk, len(got), len(data))
		}
		if maxChunk > 1 && len(sizes) < 3 {
			t.Fatalf("MaxChunk %d: read sizes %v do not vary", maxChunk, sizes)
		}
	}
}

func TestConnCutAfterWrites(t *testing.T) {
	type write struct {
		size int
		n    int
		cut  bool // the write reports ErrCut
	}
	tests := []struct {
		name     string
		cutAfter int64
		writes   []write
	}{
		{"cut inside a write", 1000, []write{{600, 600, false}, {600, 400, true}, {10, 0, true}}},
		{"cut at a write's end", 600, []write{{600, 600, false}, {1, 0, true}}},
		{"one byte", 1, []write{{5, 1, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := tcpPair(t)
			cc := mustConn(t, client, StreamFaults{CutAfter: tt.cutAfter})
			data := randomBytes(int(tt.cutAfter)*2 + 16)
			off := 0
			for i, w := range tt.writes {
				n, err := cc.Write(data[off : off+w.size])
				if n != w.n || errors.Is(err, ErrCut) != w.cut || (err != nil) != w.cut {
					t.Fatalf("write %d of %d bytes = %d, %v; want %d, cut %v", i, w.size, n, err, w.n, w.cut)
				}
				off += n
			}
			got, err := readAll(t, server)
			if !bytes.Equal(got, data[:tt.cutAfter]) {
				t.Fatalf("peer read %d bytes, want the first %d written", len(got), tt.cutAfter)
			}
			if err == nil || errors.Is(err, io.EOF) {
				t.Fatalf("peer saw %v, want the connection reset", err)
			}
			if _, err := cc.Read(make([]byte, 8)); !errors.Is(err, ErrCut) {
				t.Fatalf("Read after the cut: %v, want ErrCut", err)
			}
		})
	}
}

func TestConnCutAfterReads(t *testing.T) {
	client, server := tcpPair(t)
	cc := mustConn(t, client, StreamFaults{CutAfter: 500, MaxChunk: 64, Seed: 9})
	data := randomBytes(2000)
	go server.Write(data)
	got, err := readAll(t, cc)
	if !bytes.Equal(got, data[:500]) || !errors.Is(err, ErrCut) {
		t.Fatalf("read %d bytes then %v, want the first 500 then ErrCut", len(got), err)
	}
	if n, err := cc.Write([]byte("x")); n != 0 || !errors.Is(err, ErrCut) {
		t.Fatalf("Write after the cut = %d, %v, want ErrCut", n, err)
	}
	if err := cc.Close(); err != nil {
		t.Fatalf("Close after the cut: %v", err)
	}
}

func TestConnCutCountsBothDirections(t *testing.T) {
	client, server := tcpPair(t)
	cc := mustConn(t, client, StreamFaults{CutAfter: 100})
	if n, err := cc.Write(make([]byte, 60)); n != 60 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if _, err := server.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, cc)
	if len(got) != 40 || !errors.Is(err, ErrCut) {
		t.Fatalf("read %d bytes then %v, want 40 then ErrCut", len(got), err)
	}
}

func TestConnDelay(t *testing.T) {
	const delay = 100 * time.Millisecond
	client, server := tcpPair(t)
	cc := mustConn(t, client, StreamFaults{Delay: delay})
	start := time.Now()
	for _, s := range []string{"one ", "two ", "three"} {
		if n, err := cc.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if took := time.Since(start); took >= delay {
		t.Fatalf("Write blocked for %v; it must queue delayed bytes", took)
	}
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(server, buf, len("one two three"))
	if err != nil || string(buf[:n]) != "one two three" {
		t.Fatalf("peer read %q, %v", buf[:n], err)
	}
	if since := time.Since(start); since < delay {
		t.Fatalf("bytes readable after %v, before the delay %v", since, delay)
	}
	// Close writes what is still held before closing.
	if _, err := cc.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, server); string(got) != "tail" || err != io.EOF {
		t.Fatalf("after Close the peer read %q, %v; want \"tail\" then EOF", got, err)
	}
	if _, err := cc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
}

func TestConnDelayedBytesCountTowardsTheCut(t *testing.T) {
	client, server := tcpPair(t)
	cc := mustConn(t, client, StreamFaults{Delay: 10 * time.Millisecond, CutAfter: 10})
	data := randomBytes(16)
	for _, part := range [][]byte{data[:8], data[8:]} {
		if _, err := cc.Write(part); err != nil {
			t.Fatalf("Write: %v; delayed writes report the cut later", err)
		}
	}
	got, err := readAll(t, server)
	if !bytes.Equal(got, data[:10]) || err == nil || err == io.EOF {
		t.Fatalf("peer read %d bytes then %v, want 10 then a reset", len(got), err)
	}
	if _, err := cc.Write([]byte("x")); !errors.Is(err, ErrCut) {
		t.Fatalf("Write after the peer saw the cut: %v, want ErrCut", err)
	}
}

func TestConnDeadlines(t *testing.T) {
	for _, f := range []StreamFaults{{}, {Delay: time.Millisecond}} {
		client, _ := tcpPair(t)
		cc := mustConn(t, client, f)
		cc.SetDeadline(time.Now().Add(-time.Second))
		if _, err := cc.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%+v: Read past the deadline: %v", f, err)
		}
		if _, err := cc.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%+v: Write past the deadline: %v", f, err)
		}
		cc.SetDeadline(time.Time{})
		if _, err := cc.Write([]byte("x")); err != nil {
			t.Fatalf("%+v: Write without deadline: %v", f, err)
		}
		if cc.LocalAddr() != client.LocalAddr() || cc.RemoteAddr() != client.RemoteAddr() {
			t.Fatalf("addresses %v, %v differ from the underlying conn's", cc.LocalAddr(), cc.RemoteAddr())
		}
	}
}

func TestConnCloseStopsGoroutines(t *testing.T) {
	// Earlier tests closed theirs, which return right after Close.
	waitFor(t, 5*time.Second, "earlier tests' delay goroutines to return", func() bool {
		return countGoroutines("faultnet.newDelayer") == 0
	})
	var conns []*Conn
	for range 3 {
		client, _ := tcpPair(t)
		cc, err := NewConn(client, StreamFaults{Delay: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cc.Write([]byte("held")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cc)
	}
	if n := countGoroutines("faultnet.newDelayer"); n != len(conns) {
		t.Fatalf("%d delay goroutines, want one per conn", n)
	}
	for _, cc := range conns {
		if err := cc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := cc.Close(); err == nil {
			t.Fatal("second Close returned nil")
		}
	}
	// Close waited for them; they return right after.
	waitFor(t, 5*time.Second, "delay goroutines to return", func() bool {
		return countGoroutines("faultnet.newDelayer") == 0
	})
}

func TestConnConcurrentWritersShareTheCut(t *testing.T) {
	const cutAfter, writers = 1000, 4
	client, server := tcpPair(t)
	cc := mustConn(t, client, StreamFaults{CutAfter: cutAfter})
	written := make(chan int, writers)
	for range writers {
		go func() {
			total := 0
			for {
				n, err := cc.Write(make([]byte, 30))
				total += n
				if err != nil {
					if !errors.Is(err, ErrCut) {
						t.Errorf("Write: %v, want ErrCut", err)
					}
					written <- total
					return
				}
			}
		}()
	}
	sum := 0
	for range writers {
		sum += <-written
	}
	got, _ := readAll(t, server)
	if sum != cutAfter || len(got) != cutAfter {
		t.Fatalf("writers wrote %d bytes and the peer read %d, want exactly %d", sum, len(got), cutAfter)
	}
}
