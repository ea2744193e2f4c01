package statsd

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/peertest"
)

// exporterVersion is the prometheus statsd_exporter the ingest
// benchmark runs, built by .ci/install.d/65-statsd-exporter.sh.
const exporterVersion = "v0.31.0"

// exporter is a running prometheus statsd_exporter.
type exporter struct {
	port   int    // its UDP port
	web    string // its /metrics URL
	rcvbuf int    // its UDP socket's receive buffer, as the kernel reports it (ss)
	cmd    *exec.Cmd
}

// exporterPath is where .ci/install.d/65-statsd-exporter.sh puts it.
func exporterPath() string {
	return filepath.Join(peertest.Dir(), "statsd_exporter", exporterVersion, "statsd_exporter")
}

// startExporter runs statsd_exporter on free ports of 127.0.0.1 (UDP
// only) with its defaults, its UDP socket's buffer set to rcvbuf bytes
// when positive (--statsd.read-buffer), and waits until it listens.
// The test's cleanup kills it by PID.
func startExporter(t testing.TB, rcvbuf int) *exporter {
	t.Helper()
	bin := peertest.File(t, "prometheus statsd_exporter "+exporterVersion, exporterPath(), peertest.Script("65-statsd-exporter.sh"))
	e := &exporter{port: freeUDPPort(t)}
	webAddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	e.web = "http://" + webAddr + "/metrics"
	args := []string{"--statsd.listen-udp=" + e.addr(), "--statsd.listen-tcp=", "--web.listen-address=" + webAddr}
	if rcvbuf > 0 {
		args = append(args, fmt.Sprintf("--statsd.read-buffer=%d", rcvbuf))
	}
	e.cmd = exec.Command(bin, args...)
	e.cmd.Stderr = os.Stderr
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cmd.Process.Kill()
		_ = e.cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := e.total(); err == nil && udpPortBound(e.port) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statsd_exporter did not start on UDP %s and %s", e.addr(), e.web)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's sockets: no event to wait on
	}
	n, err := udpRecvBuffer(e.port)
	if err != nil {
		t.Fatal(err)
	}
	e.rcvbuf = n
	return e
}

func (e *exporter) addr() string { return fmt.Sprintf("127.0.0.1:%d", e.port) }

// total scrapes /metrics and adds up the ingest benchmark's counters
// (bench.kNN becomes bench_kNN).
func (e *exporter) total() (uint64, error) {
	resp, err := http.Get(e.web)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", e.web, resp.Status)
	}
	var n uint64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if ok && strings.HasPrefix(name, "bench_k") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q: %v", e.web, sc.Text(), err)
			}
			n += uint64(f)
		}
	}
	return n, sc.Err()
}

// rbField is the receive buffer in ss's socket memory line.
var rbField = regexp.MustCompile(`\brb(\d+)\b`)

// udpRecvBuffer is the receive buffer of the UDP socket bound to port
// on 127.0.0.1, as ss(8) reports it from the kernel (SO_RCVBUF's value,
// twice what was asked for).
func udpRecvBuffer(port int) (int, error) {
	out, err := exec.Command("ss", "-H", "-u", "-l", "-n", "-m", fmt.Sprintf("sport = :%d", port)).Output()
	if err != nil {
		return 0, fmt.Errorf("ss (iproute2), to read another process's receive buffer: %v", err)
	}
	m := rbField.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("ss says no receive buffer for UDP port %d: %q", port, out)
	}
	return strconv.Atoi(string(m[1]))
}
