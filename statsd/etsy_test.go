package statsd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/peertest"
)

// etsy is a running Etsy statsd 0.9.0 daemon.
type etsy struct {
	port   int // its UDP port
	rcvbuf int // its UDP socket's SO_RCVBUF (getsockopt), when asked for
	cmd    *exec.Cmd
}

// etsyRcvbufJS is loaded by node before Etsy's stats.js (node -r) when
// a test needs to know or set the receive buffer of Etsy's UDP socket,
// which Etsy 0.9.0 does not configure (servers/udp.js): it sets it to
// BROKERLESS_ETSY_RCVBUF bytes when that is positive, and prints what
// the socket has.
const etsyRcvbufJS = `
const dgram = require('dgram');
const size = parseInt(process.env.BROKERLESS_ETSY_RCVBUF, 10);
const createSocket = dgram.createSocket;
dgram.createSocket = function (...args) {
  const s = createSocket.apply(dgram, args);
  s.on('listening', () => {
    if (size > 0) s.setRecvBufferSize(size);
    console.log('brokerless: recvBufferSize ' + s.getRecvBufferSize());
  });
  return s;
};
`

// etsyRcvbufUntouched: startEtsy loads nothing before Etsy's code.
const etsyRcvbufUntouched = -1

// startEtsy runs Etsy's stats.js with config (Etsy's option names) plus
// a UDP port and a management port of its own on 127.0.0.1, and waits
// until it listens. With rcvbuf 0 or more, it also learns its UDP
// socket's receive buffer, first set to rcvbuf bytes if positive (see
// etsyRcvbufJS). The test's cleanup kills it by PID.
func startEtsy(t testing.TB, config map[string]any, rcvbuf int) *etsy {
	t.Helper()
	statsJS := peertest.File(t, "Etsy statsd 0.9.0", filepath.Join(peertest.Dir(), "statsd", "node_modules", "statsd", "stats.js"),
		peertest.Script("40-statsd.sh"))
	node := peertest.LookPath(t, "node", "apt-get install nodejs npm (.ci/install.d/10-node.sh)")
	e := &etsy{port: freeUDPPort(t)}
	config["port"], config["address"] = e.port, "127.0.0.1"
	config["mgmt_port"], config["mgmt_address"] = freeTCPPort(t), "127.0.0.1"
	config["automaticConfigReload"] = false
	b, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "config.js")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.cmd = exec.Command(node, statsJS, cfgFile)
	if rcvbuf != etsyRcvbufUntouched {
		preload := filepath.Join(t.TempDir(), "rcvbuf.js")
		if err := os.WriteFile(preload, []byte(etsyRcvbufJS), 0o600); err != nil {
			t.Fatal(err)
		}
		e.cmd = exec.Command(node, "-r", preload, statsJS, cfgFile)
		e.cmd.Env = append(os.Environ(), fmt.Sprintf("BROKERLESS_ETSY_RCVBUF=%d", rcvbuf))
	}
	e.cmd.Dir = filepath.Dir(statsJS)
	out, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.cmd.Stderr = os.Stderr
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cmd.Process.Kill()
		_ = e.cmd.Wait()
	})
	up := make(chan struct{})
	rcvbufs := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() { // and drain: Etsy logs every bad line
			line := sc.Text()
			if strings.Contains(line, "server is up") {
				close(up)
			}
			if v, ok := strings.CutPrefix(line, "brokerless: recvBufferSize "); ok {
				n, _ := strconv.Atoi(v)
				rcvbufs <- n
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(20 * time.Second):
		t.Fatal("Etsy statsd did not start")
	}
	if rcvbuf != etsyRcvbufUntouched {
		select {
		case e.rcvbuf = <-rcvbufs:
		case <-time.After(20 * time.Second):
			t.Fatal("Etsy statsd did not say its receive buffer")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !udpPortBound(e.port) {
		if time.Now().After(deadline) {
			t.Fatalf("Etsy statsd is not bound to UDP port %d", e.port)
		}
		time.Sleep(10 * time.Millisecond) // polling the kernel's socket table: no event to wait on
	}
	return e
}

func (e *etsy) addr() string { return fmt.Sprintf("127.0.0.1:%d", e.port) }

// udpPortBound reports whether a UDP socket is bound to port.
func udpPortBound(port int) bool {
	suffix := fmt.Sprintf(":%04X ", port)
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), suffix) {
			return true
		}
	}
	return false
}
