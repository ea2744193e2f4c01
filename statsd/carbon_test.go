package statsd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/peertest"
)

// carbon is a real carbon-cache (Debian's graphite-carbon) run in the
// foreground with its configuration, whisper files and log in a
// temporary directory, and a stand-in for graphite-web's tag database
// that records the series carbon tags.
type carbon struct {
	dir, data           string
	line, pickle, query int // its TCP ports
	addr                string
	log                 *peerLog
	proc                *peerProc

	mu     sync.Mutex
	tagged []string
}

func startCarbon(t *testing.T) *carbon {
	t.Helper()
	return startCarbonOn(t, freePorts)
}

// startCarbonOn starts carbon on ports from ports and waits until it
// says it listens on each (twisted's "... starting on <port>", written
// once the socket listens): another process could have taken a port
// between freeTCPPort and carbon's bind (tests of other packages run
// meanwhile), and a dial could reach that process. Carbon then exits
// with "Address already in use", and is started again on other ports.
func startCarbonOn(t *testing.T, ports portPicker) *carbon {
	t.Helper()
	bin := peertest.LookPath(t, "carbon-cache", "apt-get install graphite-carbon (.ci/install.d/60-metrics.sh)")
	peertest.LookPath(t, "whisper-fetch", "apt-get install python3-whisper (.ci/install.d/60-metrics.sh)")
	return startWithRetry(t, "carbon-cache", func() (*carbon, error) {
		c := &carbon{dir: t.TempDir()}
		c.data = filepath.Join(c.dir, "whisper")
		tagdb := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// carbon posts multipart/form-data (urllib3's fields=).
			if err := r.ParseMultipartForm(1 << 20); err == nil && r.URL.Path == "/tags/tagMultiSeries" {
				c.mu.Lock()
				c.tagged = append(c.tagged, r.PostForm["path"]...)
				c.mu.Unlock()
			}
			io.WriteString(w, "[]")
		})}
		tagln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// No connection outlives its request: the server's leak check
		// (startServer) runs before this one closes.
		tagdb.SetKeepAlivesEnabled(false)
		go tagdb.Serve(tagln)
		t.Cleanup(func() { tagdb.Close() })
		c.line, c.pickle, c.query = ports.tcp(t), ports.tcp(t), ports.tcp(t)
		c.addr = fmt.Sprintf("127.0.0.1:%d", c.line)
		conf := fmt.Sprintf(`[cache]
STORAGE_DIR = %[1]s/storage
LOCAL_DATA_DIR = %[2]s
WHITELISTS_DIR = %[1]s/lists
CONF_DIR = %[1]s
LOG_DIR = %[1]s/log
PID_DIR = %[1]s
ENABLE_LOGROTATION = False
USER =
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = inf
MAX_CREATES_PER_MINUTE = inf
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = %[3]d
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = %[4]d
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = %[5]d
ENABLE_TAGS = True
TAG_UPDATE_INTERVAL = 1
GRAPHITE_URL = http://%[6]s
CARBON_METRIC_INTERVAL = 0
LOG_UPDATES = False
LOG_CREATES = True
`, c.dir, c.data, c.line, c.pickle, c.query, tagln.Addr())
		for name, body := range map[string]string{
			"carbon.conf":          conf,
			"storage-schemas.conf": "[default]\npattern = .*\nretentions = 1s:1h\n",
		} {
			if err := os.WriteFile(filepath.Join(c.dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bin, "--config="+filepath.Join(c.dir, "carbon.conf"), "--nodaemon",
			"--pidfile="+filepath.Join(c.dir, "carbon.pid"), "start")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + c.dir, "LANG=C.UTF-8"}
		c.proc = runPeer(t, "carbon-cache", cmd, 10*time.Second)
		c.log = c.proc.out
		// The query port's factory is a plain ServerFactory; the line
		// and pickle ports' are CarbonReceiverFactory.
		listening := []string{
			fmt.Sprintf(" CarbonReceiverFactory starting on %d\n", c.line),
			fmt.Sprintf(" CarbonReceiverFactory starting on %d\n", c.pickle),
			fmt.Sprintf(" ServerFactory starting on %d\n", c.query),
		}
		err = c.proc.await(func() bool {
			out := c.log.String()
			for _, l := range listening {
				if !strings.Contains(out, l) {
					return false
				}
			}
			return true
		}, 0)
		return c, err
	})
}

// whisperPath is where carbon stores a series: dots as directories, or
// a tagged series (normalized: tags sorted) under _tagged by its
// sha256 (TAG_HASH_FILENAMES, carbon/util.py TaggedSeries.encode).
func (c *carbon) whisperPath(name string) string {
	metric, tags, ok := strings.Cut(name, ";")
	if !ok {
		return filepath.Join(c.data, filepath.FromSlash(strings.ReplaceAll(name, ".", "/"))+".wsp")
	}
	ts := strings.Split(tags, ";")
	slices.Sort(ts)
	norm := metric + ";" + strings.Join(ts, ";")
	h := sha256.Sum256([]byte(norm))
	hx := hex.EncodeToString(h[:])
	return filepath.Join(c.data, "_tagged", hx[0:3], hx[3:6], hx+".wsp")
}

// fetch reads a series' point at ts back with whisper-fetch, waiting
// for carbon to write it.
func (c *carbon) fetch(t *testing.T, name string, ts int64) (string, bool) {
	t.Helper()
	path := c.whisperPath(name)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			out, err := exec.Command("whisper-fetch", "--from="+strconv.FormatInt(ts-1, 10), "--until="+strconv.FormatInt(ts, 10), path).Output()
			if err != nil {
				t.Fatalf("whisper-fetch %s: %v", path, err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Fields(l)
				if len(f) == 2 && f[0] == strconv.FormatInt(ts, 10) && f[1] != "None" {
					return f[1], true
				}
			}
		}
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(100 * time.Millisecond) // carbon writes on its own schedule: poll the file
	}
}

// TestRealCarbon: one flush of counters, timers, gauges, sets and tagged
// lines (bare, empty and normal tags) written to a real carbon-cache is
// stored by it, read back from its whisper files with whisper-fetch
// with the values sent, and tagged where tagged; carbon's log has no
// rejected line.
func TestRealCarbon(t *testing.T) {
	c := startCarbon(t)
	g, err := NewGraphite(GraphiteConfig{Address: c.addr, Self: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Backends: []Backend{g}, UDP: []string{"127.0.0.1:0"}}
	cfg.FlushInterval = 10 * time.Second
	// No Serve: its flushes fall on the 10 s grid of the clock, and one
	// between the lines and the test's Flush would take the lines, and
	// leave the test's flush, in the same second, writing zeros over them.
	s, err := NewServer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sendUDP(t, s.UDPAddrs()[0].String(),
		"c.x:5|c\nc.x:5|c\nt.x:10|ms\nt.x:20|ms\ng.x:7|g\ns.x:a|s\ns.x:b|s\ns.x:a|s",
		"tc:1|c|#flag\nte:2|c|#env:\ntn:3|c|#region:eu,env:prod\ntt:5|ms|#env:prod\ntg:4|g|#flag,env:\nts:z|s|#env:prod")
	waitReceived(t, s, 2, 14)
	snap := s.Flush(context.Background())
	ts := snap.Timestamp
	for name, want := range map[string]string{
		"stats.c.x":                          "1.000000",
		"stats_counts.c.x":                   "10.000000",
		"stats.timers.t.x.mean":              "15.000000",
		"stats.timers.t.x.upper":             "20.000000",
		"stats.timers.t.x.count":             "2.000000",
		"stats.gauges.g.x":                   "7.000000",
		"stats.sets.s.x.count":               "2.000000",
		"stats_counts.tc;flag=true":          "1.000000",
		"stats_counts.te":                    "2.000000",
		"stats_counts.tn;env=prod;region=eu": "3.000000",
		"stats.timers.tt.mean;env=prod":      "5.000000",
		"stats.gauges.tg;flag=true":          "4.000000",
		"stats.sets.ts.count;env=prod":       "1.000000",
		"stats.statsd.server.keys.counters":  "7.000000", // with Etsy's own 3
	} {
		got, ok := c.fetch(t, name, ts)
		if !ok || got != want {
			t.Errorf("%s at %d = %q (stored: %v), want %s", name, ts, got, ok, want)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c.mu.Lock()
		tagged := slices.Clone(c.tagged)
		c.mu.Unlock()
		if slices.Contains(tagged, "stats_counts.tc;flag=true") && slices.Contains(tagged, "stats_counts.tn;env=prod;region=eu") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("carbon did not tag the tagged series; it tagged %d series, the first %q", len(tagged), tagged[:min(len(tagged), 20)])
		}
		time.Sleep(100 * time.Millisecond) // the tag queue flushes on its own schedule
	}
	for _, l := range strings.Split(c.log.String(), "\n") {
		if strings.Contains(l, "Error") || strings.Contains(l, "invalid") || strings.Contains(l, "may not be empty") {
			t.Errorf("carbon's log: %s", l)
		}
	}
}
