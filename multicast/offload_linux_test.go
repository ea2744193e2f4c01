//go:build linux

package multicast

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGSOFallback: when the kernel refuses a GSO send (here because
// the socket sends without UDP checksums, SO_NO_CHECK, which GSO
// refuses with EINVAL), the publisher turns GSO off and sends the same
// datagrams one per entry: nothing is lost or counted as refused.
func TestGSOFallback(t *testing.T) {
	skipWithoutGSO(t)
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	var serr error
	sendControl(t, p, func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1) })
	if serr != nil {
		t.Fatal(serr)
	}
	const n = 20000
	go publishN(t, p, 0, n, 64)
	idx, gaps := collectFrom(t, s, p, n, 30*time.Second)
	if len(gaps) != 0 || len(idx) != n {
		t.Fatalf("%d messages, gaps %v", len(idx), gaps)
	}
	if st := p.Stats(); st.GSO || st.SendErrors != 0 {
		t.Fatalf("publisher GSO %v after a refused GSO send, %d datagrams refused", st.GSO, st.SendErrors)
	}
}
