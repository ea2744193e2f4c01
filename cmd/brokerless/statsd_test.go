package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/statsd"
)

// startStatsd runs the statsd command's run function (the command is
// registered by the lead) until it listens, and returns its output and
// exit channel.
func startStatsd(t *testing.T, ctx context.Context, args ...string) (out, errOut *syncBuffer, done <-chan error) {
	t.Helper()
	out, errOut = newSyncBuffer(""), newSyncBuffer("statsd: flushing every")
	inv := &invocation{cmd: &statsdCmd, args: args, stdio: stdio{in: strings.NewReader(""), out: out, err: errOut}, log: newLogger(errOut)}
	c := make(chan error, 1)
	go func() { c <- statsdCmd.run(ctx, inv) }()
	select {
	case <-errOut.seen:
	case err := <-c:
		t.Fatalf("statsd ended before listening: %v\n%s", err, errOut)
	case <-time.After(10 * time.Second):
		t.Fatalf("statsd did not start:\n%s", errOut)
	}
	return out, errOut, c
}

func TestStatsdCommandFlushesOnSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut, done := startStatsd(t, ctx, "--udp", "127.0.0.1:0", "--tcp", "127.0.0.1:0",
		"--flush-interval", "50ms", "--console", "--prometheus", "127.0.0.1:0")
	m := regexp.MustCompile(`udp (127\.0\.0\.1:\d+) \(2 readers\), tcp (127\.0\.0\.1:\d+)`).FindStringSubmatch(errOut.String())
	if m == nil || !strings.Contains(errOut.String(), "prometheus http://127.0.0.1:") {
		t.Fatalf("listening line:\n%s", errOut)
	}
	u, err := net.Dial("udp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.Write([]byte("cli.udp:2|c\ncli.udp:3|c")); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", m[2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("cli.temp:7|g\ncli.tcp:5")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("|c\n")); err != nil { // a line split across writes
		t.Fatal(err)
	}
	c.Close()
	// The console prints each flush (every 50ms); wait for the lines.
	waitOutput(t, out, `"key":"cli.udp","values":{"count":5,`, `"key":"cli.tcp","values":{"count":5,`, `"key":"cli.temp","values":{"value":7}`)
	if strings.Contains(out.String(), `"key":"statsd.`) {
		t.Errorf("--console without --console-self-metrics printed the server's own metrics:\n%s", out)
	}
	cancel() // what SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("statsd: %v\n%s", err, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("statsd did not stop")
	}
	if !strings.Contains(errOut.String(), "final flush done") {
		t.Errorf("stderr:\n%s", errOut)
	}
}

func TestStatsdCommandHelpAndUsage(t *testing.T) {
	var o, e strings.Builder
	inv := &invocation{cmd: &statsdCmd, args: []string{"--help"}, stdio: stdio{in: strings.NewReader(""), out: &o, err: &e}, log: newLogger(&e)}
	if err := statsdCmd.run(context.Background(), inv); err != errHelpShown {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"Usage:\n  brokerless statsd", "EXAMPLES:", "--flush-interval", "--graphite 127.0.0.1:2003"} {
		if !strings.Contains(o.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, o.String())
		}
	}
	for _, args := range [][]string{
		{"--flush-interval", "0s", "--udp", "127.0.0.1:0"},
		{"--config", "/nonexistent/statsd.json"},
		{"--udp", "127.0.0.1:0", "--max-keys", "0"},
		{"extra"},
	} {
		inv := &invocation{cmd: &statsdCmd, args: args, stdio: stdio{in: strings.NewReader(""), out: &o, err: &e}, log: newLogger(&e)}
		var usage *usageError
		if err := statsdCmd.run(context.Background(), inv); !errors.As(err, &usage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// --console-self-metrics adds the server's own metrics to the console.
func TestStatsdCommandConsoleSelfMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, _, done := startStatsd(t, ctx, "--udp", "127.0.0.1:0", "--flush-interval", "20ms", "--console", "--console-self-metrics")
	waitOutput(t, out, `"key":"statsd.packets_received"`, `"type":"self","key":"statsd.server.keys_rejected"`)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// statsd --help lists every option the configuration file accepts, each
// nested one inside its parent's parentheses, and nothing else.
func TestStatsdHelpListsEveryConfigOption(t *testing.T) {
	var o, e strings.Builder
	inv := &invocation{cmd: &statsdCmd, args: []string{"--help"}, stdio: stdio{in: strings.NewReader(""), out: &o, err: &e}, log: newLogger(&e)}
	if err := statsdCmd.run(context.Background(), inv); err != errHelpShown {
		t.Fatalf("--help: %v", err)
	}
	help := o.String()
	start := strings.Index(help, "\n  Etsy's:")
	if start < 0 {
		t.Fatalf("no option list in the help:\n%s", help)
	}
	section, _, _ := strings.Cut(help[start+1:], "\n\n")
	for _, label := range []string{"Etsy's:", "ours:", "ignored:"} {
		if strings.Count(section, label) != 1 {
			t.Fatalf("option list lacks %q:\n%s", label, section)
		}
		section = strings.Replace(section, label, "", 1)
	}
	listed := map[string]bool{}
	for _, name := range regexp.MustCompile(`[\s,()]+`).Split(section, -1) {
		if name != "" {
			listed[name] = true
		}
	}
	flat := strings.Join(strings.Fields(section), " ")
	used, ignored := statsd.ConfigFileOptions()
	want := map[string]bool{}
	for _, name := range append(used, ignored...) {
		parent, child, nested := strings.Cut(name, ".")
		if !nested {
			want[name] = true
			continue
		}
		want[child] = true
		inside := regexp.MustCompile(`\b` + parent + ` \(([^)]*)\)`).FindStringSubmatch(flat)
		if inside == nil || !slices.Contains(strings.Split(inside[1], ", "), child) {
			t.Errorf("help does not list %s inside %s (...)", child, parent)
		}
	}
	for name := range want {
		if !listed[name] {
			t.Errorf("help does not list the option %s", name)
		}
	}
	for name := range listed {
		if !want[name] {
			t.Errorf("help lists %s, which the configuration file does not accept", name)
		}
	}
}

// A second statsd on the UDP port of a running one exits 1 with a
// message naming the address, and does not start.
func TestStatsdCommandSecondOnSamePort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, errOut, done := startStatsd(t, ctx, "--udp", "127.0.0.1:0", "--flush-interval", "1h")
	m := regexp.MustCompile(`udp (127\.0\.0\.1:\d+) \(2 readers\)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("listening line:\n%s", errOut)
	}
	for _, args := range [][]string{{"--udp", m[1]}, {"--udp", m[1], "--tcp", "127.0.0.1:0"}} {
		ctx2, cancel2 := context.WithCancel(ctx)
		e := newSyncBuffer("statsd: listening")
		exit := make(chan int, 1)
		go func() {
			exit <- run(ctx2, append([]string{"statsd"}, args...), stdio{in: strings.NewReader(""), out: io.Discard, err: e})
		}()
		select {
		case code := <-exit:
			if code != exitFailure || !strings.Contains(e.String(), m[1]) || !strings.Contains(e.String(), "already in use") {
				t.Errorf("%v: exit %d, stderr:\n%s", args, code, e)
			}
		case <-e.seen:
			cancel2()
			<-exit
			t.Errorf("%v: a second statsd started on %s:\n%s", args, m[1], e)
		}
		cancel2()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Every bad flag value exits 2 before anything listens, with a message
// naming the flag and the value once; a config file's bad option is
// named as the file names it.
func TestStatsdCommandBadValues(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "statsd.json")
	if err := os.WriteFile(cfg, []byte(`{"udpReaders": 100}`), 0o600); err != nil {
		t.Fatal(err)
	}
	badMapping := filepath.Join(t.TempDir(), "mapping.yml")
	if err := os.WriteFile(badMapping, []byte("mappings:\n- match: a.b\n  name: x\n  nonsense: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := "/" + strings.Repeat("x", 200)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--graphite", "nonsense"}, "--graphite nonsense: must be host:port"},
		{[]string{"--graphite", "127.0.0.1:99999"}, "--graphite 127.0.0.1:99999: must have a port in [1, 65535]"},
		{[]string{"--udp", "127.0.0.1:99999"}, "--udp 127.0.0.1:99999: must have a port in [0, 65535]"},
		{[]string{"--tcp", "nonsense"}, "--tcp nonsense: must be host:port"},
		{[]string{"--unixgram", long}, "--unixgram " + long + ": must be a socket path"},
		{[]string{"--prometheus", "127.0.0.1:99999"}, "--prometheus 127.0.0.1:99999: must have a port"},
		{[]string{"--repeat", "x"}, "--repeat x: must be host:port"},
		{[]string{"--flush-interval", "0s"}, "--flush-interval 0s: must be at least 1ms"},
		{[]string{"--max-keys", "0"}, "--max-keys 0: must be positive"},
		{[]string{"--evict-idle-flushes", "0"}, "--evict-idle-flushes 0: must be -1 (never) or positive"},
		{[]string{"--tcp-idle-timeout", "-1s"}, "--tcp-idle-timeout -1s: must not be negative (0: never)"},
		{[]string{"--console-self-metrics"}, "--console-self-metrics: there is no console"},
		{[]string{"--config", cfg}, "--config " + cfg + ": option udpReaders 100: must be in [1, 64]"},
		{[]string{"--prometheus-timers", "gauge"}, "--prometheus-timers gauge: must be histogram or summary"},
		{[]string{"--prometheus-buckets", "1,0.5"}, "--prometheus-buckets 1,0.5: must be increasing numbers"},
		{[]string{"--prometheus-buckets", "x"}, "--prometheus-buckets"},
		{[]string{"--mapping-config", "/nonexistent.yml"}, "--mapping-config /nonexistent.yml: no such file"},
		{[]string{"--mapping-config", badMapping}, "--mapping-config " + badMapping + ": "},
	} {
		args := append([]string{"statsd", "--udp", "127.0.0.1:0", "--prometheus", "127.0.0.1:0"}, tc.args...)
		code, stderr := runStatsdCLI(args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "listening") ||
			strings.Contains(stderr, "statsd: statsd") || strings.Contains(stderr, "bad config") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// The Prometheus flags need a Prometheus backend.
func TestStatsdCommandPrometheusFlagsWithoutBackend(t *testing.T) {
	for _, f := range []string{"--prometheus-timers=summary", "--prometheus-buckets=1", "--mapping-config=x.yml"} {
		code, stderr := runStatsdCLI("statsd", "--udp", "127.0.0.1:0", f)
		if code != exitUsage || !strings.Contains(stderr, "there is no Prometheus backend") {
			t.Errorf("%s: exit %d, stderr:\n%s", f, code, stderr)
		}
	}
}

// A listener that fails at start exits 1 naming its flag and address
// once.
func TestStatsdCommandListenFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	missing := filepath.Join(t.TempDir(), "missing", "statsd.sock")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tcp", busy}, "brokerless statsd: --tcp " + busy + ": already in use"},
		{[]string{"--unixgram", missing}, "brokerless statsd: --unixgram " + missing + ": bind: no such file or directory"},
		{[]string{"--udp", "127.0.0.1:0", "--prometheus", busy}, "brokerless statsd: --prometheus " + busy + ": bind: address already in use"},
	} {
		code, stderr := runStatsdCLI(append([]string{"statsd"}, tc.args...)...)
		if code != exitFailure || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, tc.args[len(tc.args)-1]) != 1 {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// runStatsdCLI runs a command line expected to fail at once; should it
// start instead, it is stopped after 5 s (and exits 0).
func runStatsdCLI(args ...string) (code int, stderr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var e strings.Builder
	code = run(ctx, args, stdio{in: strings.NewReader(""), out: io.Discard, err: &e})
	return code, e.String()
}

// waitOutput waits until buf holds every one of wants.
func waitOutput(t *testing.T, buf *syncBuffer, wants ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := ""
		for _, w := range wants {
			if !strings.Contains(buf.String(), w) {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("output lacks %s:\n%s", missing, buf)
		}
		<-tick.C
	}
}
