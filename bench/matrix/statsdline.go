package matrix

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The StatsD contenders each run a server that sums counter lines: a
// message is one line, "bench…:1|c", its name padded to the message's
// size, one per datagram, and delivered is what the server counted.

// statsdFlush is the flush interval of every StatsD server here.
const statsdFlushMillis = 100

// statsdMaxLine is the largest line sent: our client's packet size.
const statsdMaxLine = 1432

// statsdKey is the counter every line increments.
const statsdKey = "bench"

func statsdCan(o Options) error {
	if o.Kind != Throughput {
		return fmt.Errorf("%w: a StatsD server sums what it gets; no message of its own to time, fan out or lose", ErrNotApplicable)
	}
	if o.Size > statsdMaxLine {
		return fmt.Errorf("%w: a StatsD line here fits a %d-byte datagram", ErrNotApplicable, statsdMaxLine)
	}
	return nil
}

// statsdLine is a counter line of size bytes.
func statsdLine(size int) []byte {
	tail := ":1|c"
	pad := max(size-len(statsdKey)-len(tail), 0)
	return []byte(statsdKey + strings.Repeat("x", pad) + tail)
}

// statsdName is the counter's name in the line of size bytes.
func statsdName(size int) string {
	l := statsdLine(size)
	return string(l[:len(l)-len(":1|c")])
}

// udpSender sends the line to the server, one datagram per message,
// from an unconnected socket: a datagram sent before the server's socket
// is bound is lost (readyTally sends again), not an error of the next
// write.
type udpSender struct {
	c    *net.UDPConn
	to   *net.UDPAddr
	line []byte
}

func newUDPSender(to string, size int) (*udpSender, error) {
	addr, err := net.ResolveUDPAddr("udp4", to)
	if err != nil {
		return nil, err
	}
	c, err := listenUDP()
	if err != nil {
		return nil, err
	}
	return &udpSender{c: c, to: addr, line: statsdLine(size)}, nil
}

func (u *udpSender) Send([]byte) error {
	_, err := u.c.WriteToUDP(u.line, u.to)
	return err
}

func (u *udpSender) Flush() error { return nil }
func (u *udpSender) Subs() []Sub  { return nil }

// peersDir is where .ci/install.d puts peers that are not on PATH:
// $BROKERLESS_PEERS, or the repository's .ci/peers.
func peersDir() string {
	if d := os.Getenv("BROKERLESS_PEERS"); d != "" {
		return d
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return filepath.Join("..", ".ci", "peers")
	}
	return filepath.Join(strings.TrimSpace(string(out)), ".ci", "peers")
}

// Sustained: a StatsD server's 4 MiB socket buffer would hold a short
// probe it cannot keep up with.
func (statsdOurs) Sustained() bool      { return true }
func (*etsyStatsd) Sustained() bool     { return true }
func (*statsdExporter) Sustained() bool { return true }
