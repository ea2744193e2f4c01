package statsd

import (
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
	mgmt   int // its management (TCP) port
	rcvbuf int // its UDP socket's SO_RCVBUF (getsockopt), when asked for
	proc   *peerProc
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
// until it listens on both. With rcvbuf 0 or more, it also learns its
// UDP socket's receive buffer, first set to rcvbuf bytes if positive
// (see etsyRcvbufJS). The test's cleanup kills it by PID.
func startEtsy(t testing.TB, config map[string]any, rcvbuf int) *etsy {
	t.Helper()
	return startEtsyOn(t, freePorts, config, rcvbuf)
}

// startEtsyOn is startEtsy on ports from ports. Etsy prints "server is
// up" before its sockets are bound (the binds complete later, and a
// failed one makes node exit with EADDRINUSE), so it is up when the
// kernel lists both ports bound by node's PID.
func startEtsyOn(t testing.TB, ports portPicker, config map[string]any, rcvbuf int) *etsy {
	t.Helper()
	statsJS := peertest.File(t, "Etsy statsd 0.9.0", filepath.Join(peertest.Dir(), "statsd", "node_modules", "statsd", "stats.js"),
		peertest.Script("40-statsd.sh"))
	node := peertest.LookPath(t, "node", "apt-get install nodejs npm (.ci/install.d/10-node.sh)")
	var preload string
	if rcvbuf != etsyRcvbufUntouched {
		preload = filepath.Join(t.TempDir(), "rcvbuf.js")
		if err := os.WriteFile(preload, []byte(etsyRcvbufJS), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return startWithRetry(t, "Etsy statsd", func() (*etsy, error) {
		e := &etsy{port: ports.udp(t), mgmt: ports.tcp(t)}
		config["port"], config["address"] = e.port, "127.0.0.1"
		config["mgmt_port"], config["mgmt_address"] = e.mgmt, "127.0.0.1"
		config["automaticConfigReload"] = false
		b, err := json.Marshal(config)
		if err != nil {
			t.Fatal(err)
		}
		cfgFile := filepath.Join(t.TempDir(), "config.js")
		if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(node, statsJS, cfgFile)
		if preload != "" {
			cmd = exec.Command(node, "-r", preload, statsJS, cfgFile)
			cmd.Env = append(os.Environ(), fmt.Sprintf("BROKERLESS_ETSY_RCVBUF=%d", rcvbuf))
		}
		cmd.Dir = filepath.Dir(statsJS)
		e.proc = runPeer(t, "Etsy statsd", cmd, 0)
		err = e.proc.await(func() bool {
			out := e.proc.out.String()
			if !strings.Contains(out, "server is up") {
				return false
			}
			if preload != "" {
				n, ok := etsySaidRcvbuf(out)
				if !ok {
					return false
				}
				e.rcvbuf = n
			}
			_, udp := heldUDP(t, e.proc.pid(), e.port)
			return udp && heldTCPListener(t, e.proc.pid(), e.mgmt)
		}, 10*time.Millisecond) // polling the kernel's socket tables: no event to wait on
		return e, err
	})
}

// etsySaidRcvbuf finds the receive buffer etsyRcvbufJS printed.
func etsySaidRcvbuf(out string) (int, bool) {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "brokerless: recvBufferSize "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

func (e *etsy) addr() string { return fmt.Sprintf("127.0.0.1:%d", e.port) }
