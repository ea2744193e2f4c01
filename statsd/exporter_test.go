package statsd

import (
	"bufio"
	"fmt"
	"net/http"
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
	port    int    // its UDP port
	webPort int    // its TCP port, for /metrics
	web     string // its /metrics URL
	rcvbuf  int    // its UDP socket's receive buffer, as the kernel reports it (ss)
	proc    *peerProc
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
	return startExporterOn(t, freePorts, rcvbuf)
}

// startExporterOn is startExporter on ports from ports. statsd_exporter
// says nothing once it listens (it logs its addresses before binding,
// and exits after logging a failed bind), so it is up when the kernel
// lists both ports bound by its PID and its /metrics answers.
func startExporterOn(t testing.TB, ports portPicker, rcvbuf int) *exporter {
	t.Helper()
	bin := peertest.File(t, "prometheus statsd_exporter "+exporterVersion, exporterPath(), peertest.Script("65-statsd-exporter.sh"))
	return startWithRetry(t, "statsd_exporter", func() (*exporter, error) {
		e := &exporter{port: ports.udp(t), webPort: ports.tcp(t)}
		webAddr := fmt.Sprintf("127.0.0.1:%d", e.webPort)
		e.web = "http://" + webAddr + "/metrics"
		args := []string{"--statsd.listen-udp=" + e.addr(), "--statsd.listen-tcp=", "--web.listen-address=" + webAddr}
		if rcvbuf > 0 {
			args = append(args, fmt.Sprintf("--statsd.read-buffer=%d", rcvbuf))
		}
		e.proc = runPeer(t, "statsd_exporter", exec.Command(bin, args...), 0)
		var inode uint64
		err := e.proc.await(func() bool {
			ino, udp := heldUDP(t, e.proc.pid(), e.port)
			if !udp || !heldTCPListener(t, e.proc.pid(), e.webPort) {
				return false
			}
			_, err := e.total()
			inode = ino
			return err == nil
		}, 20*time.Millisecond) // polling the kernel's socket tables: no event to wait on
		if err != nil {
			return nil, err
		}
		if e.rcvbuf, err = udpRecvBuffer(e.port, inode); err != nil {
			t.Fatal(err)
		}
		return e, nil
	})
}

func (e *exporter) addr() string { return fmt.Sprintf("127.0.0.1:%d", e.port) }

// exporterScrape bounds a scrape of /metrics: a deadlock detector, for
// a web port that does not answer.
var exporterScrape = &http.Client{Timeout: 10 * time.Second}

// total scrapes /metrics and adds up the ingest benchmark's counters
// (bench.kNN becomes bench_kNN).
func (e *exporter) total() (uint64, error) {
	resp, err := exporterScrape.Get(e.web)
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

// udpRecvBuffer is the receive buffer of the UDP socket of inode,
// bound to port, as ss(8) reports it from the kernel (SO_RCVBUF's
// value, twice what was asked for). Other sockets on the port (on
// another address) are not it.
func udpRecvBuffer(port int, inode uint64) (int, error) {
	out, err := exec.Command("ss", "-H", "-u", "-l", "-n", "-m", "-e", fmt.Sprintf("sport = :%d", port)).Output()
	if err != nil {
		return 0, fmt.Errorf("ss (iproute2), to read another process's receive buffer: %v", err)
	}
	// A socket is a line and its continuation lines (indented: skmem).
	ino := fmt.Sprintf(" ino:%d ", inode)
	var sock []string
	for _, line := range append(strings.Split(string(out), "\n"), "") {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ") {
			sock = append(sock, line)
			continue
		}
		if len(sock) > 0 && strings.Contains(sock[0]+" ", ino) {
			if m := rbField.FindStringSubmatch(strings.Join(sock, " ")); m != nil {
				return strconv.Atoi(m[1])
			}
		}
		sock = []string{line}
	}
	return 0, fmt.Errorf("ss says no receive buffer for the UDP socket of inode %d on port %d: %q", inode, port, out)
}
