package matrix

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// etsyStatsd is Etsy's statsd 0.9.0 (Node.js), installed by
// .ci/install.d/40-statsd.sh under $BROKERLESS_PEERS: one process for
// the run, a 100 ms flush, its UDP socket's receive buffer set to 4 MiB
// as ours (a preload script; Etsy has no option for it), and its
// graphite backend writing to a listener here that sums each counter's
// stats_counts.
type etsyStatsd struct {
	mu   sync.Mutex
	proc *etsyProc
}

func (*etsyStatsd) Name() string     { return "etsy-statsd" }
func (*etsyStatsd) Baseline() string { return "raw-udp" }
func (*etsyStatsd) Peer() string     { return "" }

func etsyPath() string {
	return filepath.Join(peersDir(), "statsd", "node_modules", "statsd", "stats.js")
}

func (*etsyStatsd) Can(o Options) error {
	if err := statsdCan(o); err != nil {
		return err
	}
	if _, err := os.Stat(etsyPath()); err != nil {
		return fmt.Errorf("%w: Etsy statsd 0.9.0 not found at %s (run .ci/install.d/40-statsd.sh)", ErrUnavailable, etsyPath())
	}
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("%w: node not found (run .ci/install.d/10-node.sh)", ErrUnavailable)
	}
	return nil
}

type etsyProc struct {
	cmd     *exec.Cmd
	dir     string
	port    int
	ln      net.Listener
	mu      sync.Mutex
	counted map[string]float64
}

const etsyRcvbufJS = `
const dgram = require('dgram');
const createSocket = dgram.createSocket;
dgram.createSocket = function (...args) {
  const s = createSocket.apply(dgram, args);
  s.on('listening', () => s.setRecvBufferSize(4194304));
  return s;
};
`

func (c *etsyStatsd) start() (*etsyProc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return c.proc, nil
	}
	p := &etsyProc{counted: map[string]float64{}}
	var err error
	if p.ln, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	go p.graphite()
	udp, err := listenUDP()
	if err != nil {
		p.close()
		return nil, err
	}
	p.port = udp.LocalAddr().(*net.UDPAddr).Port
	udp.Close()
	mgmt, err := freeTCPPort()
	if err != nil {
		p.close()
		return nil, err
	}
	if p.dir, err = os.MkdirTemp("", "bench-etsy-"); err != nil {
		p.close()
		return nil, err
	}
	cfg, _ := json.Marshal(map[string]any{
		"port": p.port, "address": "127.0.0.1", "mgmt_port": mgmt, "mgmt_address": "127.0.0.1",
		"automaticConfigReload": false, "flushInterval": statsdFlushMillis,
		"backends": []string{"./backends/graphite"}, "graphiteHost": "127.0.0.1",
		"graphitePort": p.ln.Addr().(*net.TCPAddr).Port,
	})
	cfgFile, preload := filepath.Join(p.dir, "config.js"), filepath.Join(p.dir, "rcvbuf.js")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		p.close()
		return nil, err
	}
	if err := os.WriteFile(preload, []byte(etsyRcvbufJS), 0o600); err != nil {
		p.close()
		return nil, err
	}
	p.cmd = exec.Command("node", "-r", preload, etsyPath(), cfgFile)
	p.cmd.Dir = filepath.Dir(etsyPath())
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		p.close()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		p.close()
		return nil, err
	}
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() { // and drain
			if strings.Contains(sc.Text(), "server is up") {
				close(up)
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(20 * time.Second):
		p.close()
		return nil, fmt.Errorf("etsy statsd did not start in 20s")
	}
	c.proc = p
	return p, nil
}

// graphite reads what Etsy's graphite backend writes, a connection per
// flush, and sums "stats_counts.KEY VALUE TIME".
func (p *etsyProc) graphite() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 || !strings.HasPrefix(f[0], "stats_counts.") {
					continue
				}
				v, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					continue
				}
				p.mu.Lock()
				p.counted[strings.TrimPrefix(f[0], "stats_counts.")] += v
				p.mu.Unlock()
			}
		}()
	}
}

func (p *etsyProc) close() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
	if p.ln != nil {
		p.ln.Close()
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

type etsyLink struct {
	*udpSender
	p   *etsyProc
	key string
}

func (c *etsyStatsd) Open(_ context.Context, o Options) (Link, error) {
	p, err := c.start()
	if err != nil {
		return nil, err
	}
	s, err := newUDPSender(fmt.Sprintf("127.0.0.1:%d", p.port), o.Size)
	if err != nil {
		return nil, err
	}
	return &etsyLink{udpSender: s, p: p, key: statsdName(o.Size)}, nil
}

func (l *etsyLink) Counted() (uint64, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	return uint64(l.p.counted[l.key]), nil
}

func (l *etsyLink) Close() error { return l.c.Close() }

// Close stops the process.
func (c *etsyStatsd) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		c.proc.close()
		c.proc = nil
	}
	return nil
}
