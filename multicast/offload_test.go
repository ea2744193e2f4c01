package multicast

import (
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// skipWithoutGSO skips t where the kernel offers no UDP GSO.
func skipWithoutGSO(t *testing.T) {
	t.Helper()
	if !gsoAvailable() {
		t.Skip("this kernel has no UDP_SEGMENT (UDP GSO, Linux 4.18)")
	}
}

// TestOffload: a publisher sending runs of datagrams with UDP GSO
// reaches a subscriber reading them merged (GRO) and one reading them
// one by one (NoOffload): both get every message, in order, and the
// counters show that runs went out and came in merged. Skipped where
// the kernel offers no UDP GSO.
func TestOffload(t *testing.T) {
	skipWithoutGSO(t)
	cfg := testConfig(t)
	plainCfg := cfg
	plainCfg.NoOffload = true
	gro, plain := mustSub(t, cfg), mustSub(t, plainCfg)
	if !gro.Stats().GRO {
		t.Skip("this kernel refused UDP_GRO (Linux 5.0)")
	}
	if plain.Stats().GRO {
		t.Fatal("NoOffload subscriber has GRO on")
	}
	p := mustPub(t, cfg)
	const n = 20000
	go publishN(t, p, 0, n, 64)
	for _, s := range []*Subscriber{gro, plain} {
		idx, gaps := collectFrom(t, s, p, n, 30*time.Second)
		if len(gaps) != 0 {
			t.Fatalf("gaps %v", gaps)
		}
		for i, v := range idx {
			if v != i {
				t.Fatalf("message %d is %d", i, v)
			}
		}
	}
	if st := p.Stats(); !st.GSO || st.GSORuns == 0 {
		t.Fatalf("publisher GSO %v, %d runs sent (stats %+v)", st.GSO, st.GSORuns, st)
	}
	if st := gro.Stats(); st.GROReads == 0 {
		t.Fatalf("GRO subscriber read no run (stats %+v)", st)
	}
	if st := plain.Stats(); st.GROReads != 0 {
		t.Fatalf("NoOffload subscriber read %d runs", st.GROReads)
	}
}

// TestGSOShortage: a GSO send that fails for want of buffer space
// (ENOBUFS, injected once) fails that run, as it would fail its
// datagrams sent one by one, and leaves GSO on: only the kernel
// refusing segmentation turns it off. Subscribers repair the run.
func TestGSOShortage(t *testing.T) {
	skipWithoutGSO(t)
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	var failed atomic.Bool
	for set := false; !set; runtime.Gosched() {
		p.mu.Lock()
		if !p.writing {
			write := p.writeBatch
			p.writeBatch = func(ms []ipv4.Message, flags int) (int, error) {
				if ms[0].OOB != nil && failed.CompareAndSwap(false, true) {
					return 0, &net.OpError{Op: "write", Net: "udp", Err: os.NewSyscallError("sendmmsg", syscall.ENOBUFS)}
				}
				return write(ms, flags)
			}
			set = true
		}
		p.mu.Unlock()
	}
	const n = 20000
	go publishN(t, p, 0, n, 64)
	idx, gaps := collectFrom(t, s, p, n, 30*time.Second)
	if len(gaps) != 0 || len(idx) != n {
		t.Fatalf("%d messages, gaps %v", len(idx), gaps)
	}
	st := p.Stats()
	if !failed.Load() {
		t.Fatal("no GSO entry was sent")
	}
	if !st.GSO || st.SendErrors == 0 {
		t.Fatalf("after ENOBUFS on a GSO entry: GSO %v, %d datagrams refused (want on, the run's)", st.GSO, st.SendErrors)
	}
}
