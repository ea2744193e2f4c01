package faultnet

import (
	"errors"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

var _ net.PacketConn = (*PacketConn)(nil)

func TestConfigValidateNamesTheSide(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string
	}{
		{Config{Read: Faults{Loss: 2}}, "Read.Loss"},
		{Config{Write: Faults{Jitter: -1}}, "Write.Jitter"},
	}
	for _, tt := range tests {
		_, err := NewPacketConn(nil, tt.cfg)
		checkFaultsError(t, err, tt.field)
	}
}

// popAll pushes b into ref and returns the indexes it delivers at once.
func popAll(ref *Injector, b []byte) []int {
	ref.Push(t0, b, nil)
	var out []int
	for {
		d, _, ok := ref.Pop(t0)
		if !ok {
			return out
		}
		out = append(out, index(d))
	}
}

func TestPacketConnWriteFaultsMatchInjector(t *testing.T) {
	f := Faults{Seed: 11, Loss: 0.3, Duplicate: 0.2}
	raw, dst := listenUDP(t), listenUDP(t)
	pc := mustPacketConn(t, raw, Config{Write: f})
	ref := mustInjector(t, f)
	marker := []byte{'M'} // sent on raw, past the faults, after each datagram
	buf := make([]byte, 64)
	for i := range 300 {
		if n, err := pc.WriteTo(datagram(i), dst.LocalAddr()); n != 8 || err != nil {
			t.Fatalf("WriteTo = %d, %v", n, err)
		}
		if _, err := raw.WriteTo(marker, dst.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		var got []int
		for {
			dst.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, _, err := dst.ReadFrom(buf)
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
			got = append(got, index(buf[:n]))
		}
		if want := popAll(ref, datagram(i)); !slices.Equal(got, want) {
			t.Fatalf("datagram %d: received %v, want %v", i, got, want)
		}
	}
	if _, w := pc.Stats(); w != ref.Stats() || w.Dropped == 0 || w.Duplicated == 0 {
		t.Fatalf("write stats %+v, want %+v with drops and duplicates", w, ref.Stats())
	}
}

func TestPacketConnReadFaultsMatchInjector(t *testing.T) {
	f := Faults{Seed: 12, Loss: 0.3, Duplicate: 0.2}
	raw, src := listenUDP(t), listenUDP(t)
	pc := mustPacketConn(t, raw, Config{Read: f})
	ref := mustInjector(t, f)
	buf := make([]byte, 64)
	// Send until at least 300 datagrams went and the last one passed, so
	// the PacketConn has read every one of them.
	for i := 0; ; i++ {
		if _, err := src.WriteTo(datagram(i), raw.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		want := popAll(ref, datagram(i))
		for _, w := range want {
			pc.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				t.Fatal(err)
			}
			if got := index(buf[:n]); got != w || addr.String() != src.LocalAddr().String() {
				t.Fatalf("read datagram %d from %v, want %d from %v", got, addr, w, src.LocalAddr())
			}
		}
		if i >= 300 && len(want) > 0 {
			break
		}
	}
	if r, _ := pc.Stats(); r != ref.Stats() || r.Dropped == 0 || r.Duplicated == 0 {
		t.Fatalf("read stats %+v, want %+v with drops and duplicates", r, ref.Stats())
	}
}

func TestPacketConnReadDelay(t *testing.T) {
	const delay, n = 30 * time.Millisecond, 20
	raw, src := listenUDP(t), listenUDP(t)
	pc := mustPacketConn(t, raw, Config{Read: Faults{Seed: 3, Delay: delay, Jitter: 5 * time.Millisecond}})
	sent := make([]time.Time, n)
	for i := range n {
		sent[i] = time.Now()
		if _, err := src.WriteTo(datagram(i), raw.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 64)
	seen := map[int]bool{}
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range n {
		k, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		i := index(buf[:k])
		if early := delay - time.Since(sent[i]); early > 0 {
			t.Fatalf("datagram %d read %v before its delay", i, early)
		}
		seen[i] = true
	}
	if len(seen) != n {
		t.Fatalf("read %d distinct datagrams, want %d", len(seen), n)
	}
}

func checkTimeout(t *testing.T, err error) {
	t.Helper()
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !os.IsTimeout(err) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("error %v is not a deadline timeout", err)
	}
}

func TestPacketConnReadDeadline(t *testing.T) {
	tests := []struct {
		name     string
		faults   Faults
		send     bool          // a datagram is sent before reading
		deadline time.Duration // relative to the read
	}{
		{"nothing sent", Faults{Delay: time.Millisecond}, false, 50 * time.Millisecond},
		{"datagram held past the deadline", Faults{Delay: 300 * time.Millisecond}, true, 50 * time.Millisecond},
		{"datagram reordered past the deadline", Faults{Reorder: 1, ReorderDelay: 300 * time.Millisecond}, true, 50 * time.Millisecond},
		{"deadline already passed", Faults{Duplicate: 1}, true, -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, src := listenUDP(t), listenUDP(t)
			pc := mustPacketConn(t, raw, Config{Read: tt.faults})
			start := time.Now()
			if tt.send {
				if _, err := src.WriteTo([]byte("x"), raw.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
			deadline := start.Add(tt.deadline)
			pc.SetReadDeadline(deadline)
			_, _, err := pc.ReadFrom(make([]byte, 64))
			checkTimeout(t, err)
			if now := time.Now(); now.Before(deadline) || now.Sub(start) > max(tt.deadline, 0)+2*time.Second {
				t.Fatalf("timed out at +%v, want at the deadline +%v", now.Sub(start), tt.deadline)
			}
			// The deadline stays in force.
			_, _, err = pc.ReadFrom(make([]byte, 64))
			checkTimeout(t, err)
			if !tt.send {
				return
			}
			// Without a deadline the datagram comes once due.
			pc.SetReadDeadline(time.Time{})
			n, _, err := pc.ReadFrom(make([]byte, 64))
			if err != nil || n != 1 {
				t.Fatalf("ReadFrom without deadline = %d, %v", n, err)
			}
			if d := tt.faults.Delay + tt.faults.ReorderDelay; time.Since(start) < d {
				t.Fatalf("datagram read after %v, before its delay %v", time.Since(start), d)
			}
		})
	}
}

func TestPacketConnSetReadDeadlineUnblocksReader(t *testing.T) {
	raw, src := listenUDP(t), listenUDP(t)
	pc := mustPacketConn(t, raw, Config{Read: Faults{Delay: time.Hour}})
	if _, err := src.WriteTo([]byte("x"), raw.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, _, err := pc.ReadFrom(make([]byte, 64))
		errc <- err
	}()
	// Once the datagram is held, the reader waits on the socket.
	waitFor(t, 5*time.Second, "the datagram to be held", func() bool {
		r, _ := pc.Stats()
		return r.Delayed == 1
	})
	pc.SetReadDeadline(time.Now())
	select {
	case err := <-errc:
		checkTimeout(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFrom still blocked after the deadline was moved to now")
	}
}

func TestPacketConnDelayedWritesArrive(t *testing.T) {
	const delay = 200 * time.Millisecond
	raw, dst := listenUDP(t), listenUDP(t)
	pc := mustPacketConn(t, raw, Config{Write: Faults{Delay: delay}})
	start := time.Now()
	for i := range 3 {
		if _, err := pc.WriteTo(datagram(i), dst.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took >= delay {
		t.Fatalf("WriteTo blocked for %v; delayed datagrams must be sent in the background", took)
	}
	buf := make([]byte, 64)
	dst.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 3 {
		n, _, err := dst.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if got := index(buf[:n]); got != i {
			t.Fatalf("received datagram %d, want %d", got, i)
		}
		if since := time.Since(start); since < delay {
			t.Fatalf("datagram %d arrived after %v, before its delay %v", i, since, delay)
		}
	}
	if pc.WriteErrors() != 0 {
		t.Fatalf("WriteErrors = %d", pc.WriteErrors())
	}
}

func TestPacketConnConcurrentWriters(t *testing.T) {
	rec := &recordConn{}
	pc := mustPacketConn(t, rec, Config{Write: Faults{Seed: 4, Loss: 0.1, Duplicate: 0.1, Reorder: 0.2,
		ReorderDelay: time.Millisecond, Delay: time.Millisecond, Jitter: 2 * time.Millisecond}})
	const writers, each = 4, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := pc.WriteTo(datagram(w*each+i), testAddr); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var observer sync.WaitGroup
	observer.Go(func() { // Stats and deadlines race with the writers
		for {
			select {
			case <-stop:
				return
			default:
				pc.Stats()
				pc.SetWriteDeadline(time.Time{})
			}
		}
	})
	wg.Wait()
	close(stop)
	observer.Wait()
	_, s := pc.Stats()
	if s.Passed+s.Dropped+s.Overflow != writers*each {
		t.Fatalf("stats %+v do not account for %d datagrams", s, writers*each)
	}
	waitFor(t, 5*time.Second, "delayed datagrams to be sent", func() bool {
		return uint64(len(rec.written())) == s.Passed+s.Duplicated
	})
	count := map[int]int{}
	for _, b := range rec.written() {
		count[index(b)]++
	}
	for i, c := range count {
		if c > 2 || i < 0 || i >= writers*each {
			t.Fatalf("datagram %d sent %d times", i, c)
		}
	}
}

func TestPacketConnWriteDeadline(t *testing.T) {
	rec := &recordConn{}
	pc := mustPacketConn(t, rec, Config{Write: Faults{Loss: 0.5}})
	pc.SetWriteDeadline(time.Now().Add(-time.Second))
	_, err := pc.WriteTo([]byte("x"), testAddr)
	checkTimeout(t, err)
	pc.SetDeadline(time.Time{})
	if _, err := pc.WriteTo([]byte("x"), testAddr); err != nil {
		t.Fatalf("WriteTo after clearing the deadline: %v", err)
	}
}

func TestPacketConnCloseStopsGoroutines(t *testing.T) {
	// Earlier tests closed theirs, which return right after Close.
	waitFor(t, 5*time.Second, "earlier tests' sender goroutines to return", func() bool {
		return countGoroutines("faultnet.(*writer).startSender") == 0
	})
	base := runtime.NumGoroutine()
	var conns []*PacketConn
	for range 5 {
		raw, dst := listenUDP(t), listenUDP(t)
		pc, err := NewPacketConn(raw, Config{Write: Faults{Delay: time.Hour}, Read: Faults{Delay: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pc.WriteTo([]byte("held"), dst.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, pc)
	}
	if n := countGoroutines("faultnet.(*writer).startSender"); n != len(conns) {
		t.Fatalf("%d sender goroutines, want one per conn", n)
	}
	for _, pc := range conns {
		if err := pc.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := pc.WriteTo([]byte("x"), testAddr); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("WriteTo after Close: %v, want net.ErrClosed", err)
		}
		if _, _, err := pc.ReadFrom(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("ReadFrom after Close: %v, want net.ErrClosed", err)
		}
		if err := pc.Close(); err == nil {
			t.Fatal("second Close returned nil")
		}
	}
	// Close waited for them; they return right after.
	waitFor(t, 5*time.Second, "sender goroutines to return", func() bool {
		return countGoroutines("faultnet.(*writer).startSender") == 0
	})
	waitFor(t, 5*time.Second, "goroutines to return to the baseline", func() bool {
		return runtime.NumGoroutine() <= base
	})
}

func TestPacketConnWithoutFaultsPassesThrough(t *testing.T) {
	raw, dst := listenUDP(t), listenUDP(t)
	pc := mustPacketConn(t, raw, Config{})
	if _, err := pc.WriteTo([]byte("plain"), dst.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	dst.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := dst.ReadFrom(buf); err != nil || string(buf[:n]) != "plain" {
		t.Fatalf("ReadFrom = %q, %v", buf[:n], err)
	}
	if r, w := pc.Stats(); r != (Stats{}) || w != (Stats{}) {
		t.Fatalf("Stats = %+v, %+v, want zero", r, w)
	}
	if pc.LocalAddr().String() != raw.LocalAddr().String() {
		t.Fatalf("LocalAddr = %v, want %v", pc.LocalAddr(), raw.LocalAddr())
	}
}
