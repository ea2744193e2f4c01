package statsd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Starting a real peer (Etsy's statsd, statsd_exporter, carbon-cache)
// on ports picked by freeUDPPort and freeTCPPort: the probe socket is
// closed before the peer binds, and tests of other packages run
// meanwhile, so another process may take a port in between. A start
// therefore
//   - takes as proof that the peer listens only what comes from the
//     peer itself: its own words where it says so after binding
//     (carbon), else sockets the kernel lists as bound on the ports and
//     held by the peer's PID (heldUDP, heldTCPListener) — any socket on
//     the port could be the other process's;
//   - learns at once that a port was taken: the peer printed its bind
//     error, or exited;
//   - then starts the peer again on new ports, up to peerStartTries
//     times (startWithRetry).

// peerStartTries: how many times a peer is started, each time on new
// ports, while it finds a port picked for it taken.
const peerStartTries = 3

// peerStartTimeout: how long a peer may take to listen; a deadlock
// detector, not a speed requirement.
const peerStartTimeout = 30 * time.Second

// peerLogMax: how much of a peer's output is kept (Etsy logs every bad
// line it receives).
const peerLogMax = 1 << 20

// portPicker hands out the ports a peer is started on: free ones
// (freePorts), or in the tests of the start itself a taken one first.
type portPicker struct {
	udp, tcp func(testing.TB) int
}

var freePorts = portPicker{udp: freeUDPPort, tcp: freeTCPPort}

// errPortTaken: the peer could not bind a port picked for it.
var errPortTaken = errors.New("a port picked for it is taken")

// startWithRetry calls start, which starts a peer on ports it picks,
// again while it fails with errPortTaken, up to peerStartTries times;
// any other failure ends the test.
func startWithRetry[P any](t testing.TB, name string, start func() (P, error)) P {
	t.Helper()
	for try := 1; ; try++ {
		p, err := start()
		if err == nil {
			return p
		}
		if !errors.Is(err, errPortTaken) || try == peerStartTries {
			t.Fatalf("%s (start %d of at most %d): %v", name, try, peerStartTries, err)
		}
		t.Logf("%s (start %d): %v; starting it again on other ports", name, try, err)
	}
}

// peerProc is a running peer process with its output.
type peerProc struct {
	name   string
	cmd    *exec.Cmd
	out    *peerLog      // its stdout and stderr
	exited chan struct{} // closed when it has exited and all its output is in out
	grace  time.Duration
	once   sync.Once
}

// runPeer starts cmd with its stdout and stderr written to a peerLog.
// It is stopped by PID when the test ends (see stop), and its output
// logged if the test failed.
func runPeer(t testing.TB, name string, cmd *exec.Cmd, grace time.Duration) *peerProc {
	t.Helper()
	p := &peerProc{name: name, cmd: cmd, out: newPeerLog(), exited: make(chan struct{}), grace: grace}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s (PID %d) wrote:\n%s", name, cmd.Process.Pid, p.out)
		}
	})
	return p
}

func (p *peerProc) pid() int { return p.cmd.Process.Pid }

// stop ends the peer and waits for it: SIGTERM, and SIGKILL if it is
// still running after its grace period (at once when that is 0).
func (p *peerProc) stop() {
	p.once.Do(func() {
		if p.grace > 0 {
			p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
				return
			case <-time.After(p.grace):
			}
		}
		p.cmd.Process.Kill()
		<-p.exited
	})
}

// await waits until ready, called whenever the peer writes and, when
// poll is positive, every poll (for what the peer does not announce),
// reports it listens. If the peer says a port is taken, it stops the
// peer and returns an error wrapping errPortTaken; if the peer exits
// otherwise or is not ready within peerStartTimeout, another error.
func (p *peerProc) await(ready func() bool, poll time.Duration) error {
	deadline := time.NewTimer(peerStartTimeout)
	defer deadline.Stop()
	var tick <-chan time.Time
	if poll > 0 {
		tk := time.NewTicker(poll)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		exited := false
		select {
		case <-p.exited:
			exited = true
		default:
		}
		if addrInUse(p.out.String()) {
			p.stop()
			return fmt.Errorf("%w (PID %d):\n%s", errPortTaken, p.pid(), p.out)
		}
		if exited {
			return fmt.Errorf("PID %d exited (%v):\n%s", p.pid(), p.cmd.ProcessState, p.out)
		}
		if ready() {
			return nil
		}
		select {
		case <-p.out.wrote:
		case <-tick:
		case <-p.exited:
		case <-deadline.C:
			return fmt.Errorf("PID %d does not listen after %v:\n%s", p.pid(), peerStartTimeout, p.out)
		}
	}
}

// addrInUse: a peer's output has a bind error, as node ("bind
// EADDRINUSE"), Go ("address already in use") or Python ("Address
// already in use") words it.
func addrInUse(out string) bool {
	return strings.Contains(out, "EADDRINUSE") || strings.Contains(strings.ToLower(out), "address already in use")
}

// peerLog keeps the first peerLogMax bytes a peer writes, counts the
// rest, and wakes await at each write.
type peerLog struct {
	mu      sync.Mutex
	b       []byte
	dropped int
	wrote   chan struct{} // capacity 1: a write since the last wake-up
}

func newPeerLog() *peerLog { return &peerLog{wrote: make(chan struct{}, 1)} }

func (l *peerLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	n := min(len(p), peerLogMax-len(l.b))
	l.b = append(l.b, p[:n]...)
	l.dropped += len(p) - n
	l.mu.Unlock()
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *peerLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped > 0 {
		return fmt.Sprintf("%s\n[%d bytes more not kept]", l.b, l.dropped)
	}
	return string(l.b)
}

// socketInodes are the inodes of the sockets process pid holds, from
// its descriptors' links ("socket:[N]"); none once it has exited.
func socketInodes(pid int) map[uint64]bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	out := make(map[uint64]bool)
	for _, e := range ents {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		if v, ok := strings.CutPrefix(link, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
				out[n] = true
			}
		}
	}
	return out
}

// heldUDP returns the inode of a UDP socket bound to port that process
// pid holds, if any: another process's socket on the port does not
// count.
func heldUDP(t testing.TB, pid, port int) (uint64, bool) {
	t.Helper()
	socks, err := udpSockets(port)
	if err != nil {
		t.Fatal(err)
	}
	ours := socketInodes(pid)
	for _, s := range socks {
		if ours[s.inode] {
			return s.inode, true
		}
	}
	return 0, false
}

// heldTCPListener reports whether process pid holds a TCP socket
// listening on port (/proc/net/tcp and tcp6, state 0A).
func heldTCPListener(t testing.TB, pid, port int) bool {
	t.Helper()
	socks, ok := procSockets([]string{"/proc/net/tcp", "/proc/net/tcp6"}, port, "0A")
	if !ok {
		t.Fatal("cannot read /proc/net/tcp to find a peer's listening socket")
	}
	ours := socketInodes(pid)
	for _, s := range socks {
		if ours[s.inode] {
			return true
		}
	}
	return false
}
