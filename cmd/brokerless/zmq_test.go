package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeTCPPort is a port of 127.0.0.1 free a moment ago.
func freeTCPPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// background runs a command line until ctx ends; started is closed once
// its stderr contains want.
type background struct {
	out, err *syncBuffer
	code     chan int
}

func startCLI(t *testing.T, ctx context.Context, want string, args ...string) *background {
	t.Helper()
	b := &background{out: newSyncBuffer(""), err: newSyncBuffer(want), code: make(chan int, 1)}
	go func() {
		b.code <- run(ctx, args, stdio{in: strings.NewReader(""), out: b.out, err: b.err})
	}()
	select {
	case <-b.err.seen:
	case c := <-b.code:
		t.Fatalf("%q exited with %d before %q:\n%s", args, c, want, b.err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%q did not say %q:\n%s", args, want, b.err)
	}
	return b
}

// wait returns the exit status, failing the test after a while.
func (b *background) wait(t *testing.T) int {
	t.Helper()
	select {
	case c := <-b.code:
		return c
	case <-time.After(20 * time.Second):
		t.Fatalf("did not exit:\n%s", b.err)
		return -1
	}
}

// checkTicks checks that sub printed n tick lines and no gap.
func checkTicks(t *testing.T, sub *background, n int) {
	t.Helper()
	if c := sub.wait(t); c != exitOK {
		t.Fatalf("sub exit %d:\n%s", c, sub.err)
	}
	lines := strings.Split(strings.TrimSuffix(sub.out.String(), "\n"), "\n")
	if len(lines) != n || !strings.Contains(lines[0], " bid=") {
		t.Errorf("sub printed %d lines, want %d ticks:\n%s", len(lines), n, sub.out)
	}
	if w := fmt.Sprintf("received %d messages; gaps 0 (0 lost)", n); !strings.Contains(sub.err.String(), w) {
		t.Errorf("sub stderr lacks %q:\n%s", w, sub.err)
	}
}

// TestZmqPubSubURL: pub and sub take zmq+tcp:// URLs; a subscriber that
// connects before the publisher binds gets its ticks, numbered, without
// gaps, and only the topics it subscribed to.
func TestZmqPubSubURL(t *testing.T) {
	url := "zmq+tcp://127.0.0.1:" + freeTCPPort(t)
	sub := startCLI(t, context.Background(), "listening on", "sub", url+"?subscribe=AAPL&subscribe=MSFT", "--count", "20")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := startCLI(t, ctx, "publishing to", "pub", url, "--ticks", "--rate", "5000")
	checkTicks(t, sub, 20)
	for _, l := range strings.Split(strings.TrimSpace(sub.out.String()), "\n") {
		if f := strings.Fields(l); len(f) < 2 || f[1] != "AAPL" && f[1] != "MSFT" {
			t.Errorf("a line of a topic not subscribed to: %q", l)
		}
	}
	if !strings.Contains(sub.err.String(), "listening on "+url+"?subscribe=AAPL&subscribe=MSFT (ordered|gap-reports|deduplicated)") {
		t.Errorf("sub stderr:\n%s", sub.err)
	}
	cancel()
	if c := pub.wait(t); c != exitOK || !regexp.MustCompile(`published \d+ messages`).MatchString(pub.err.String()) {
		t.Errorf("pub exit %d:\n%s", c, pub.err)
	}
}

// TestZmqBoundPortZero: a pub, or a sub with mode=bind, given port 0
// says which port it got, and what connects there works.
func TestZmqBoundPortZero(t *testing.T) {
	bound := regexp.MustCompile(`; bound to tcp://(127\.0\.0\.1:\d+)\n`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := startCLI(t, ctx, "publishing to", "pub", "zmq+tcp://127.0.0.1:0", "--ticks", "--rate", "5000")
	m := bound.FindStringSubmatch(pub.err.String())
	if m == nil {
		t.Fatalf("pub does not say its port:\n%s", pub.err)
	}
	checkTicks(t, startCLI(t, context.Background(), "listening on", "sub", "zmq+tcp://"+m[1], "--count", "5"), 5)
	cancel()
	pub.wait(t)

	sub := startCLI(t, context.Background(), "listening on", "sub", "zmq+tcp://127.0.0.1:0?mode=bind", "--count", "5")
	if m = bound.FindStringSubmatch(sub.err.String()); m == nil {
		t.Fatalf("sub does not say its port:\n%s", sub.err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	pub = startCLI(t, ctx, "publishing to", "pub", "zmq+tcp://"+m[1]+"?mode=connect", "--ticks", "--rate", "5000")
	checkTicks(t, sub, 5)
	cancel()
	pub.wait(t)
}

// TestZmqPipeURL: a pipe from one zmq+tcp:// URL to another forwards
// what it receives.
func TestZmqPipeURL(t *testing.T) {
	from, to := "zmq+tcp://127.0.0.1:"+freeTCPPort(t), "zmq+tcp://127.0.0.1:"+freeTCPPort(t)
	sub := startCLI(t, context.Background(), "listening on", "sub", to, "--count", "20")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pipe := startCLI(t, ctx, "piping", "pipe", from, to)
	pub := startCLI(t, ctx, "publishing to", "pub", from, "--ticks", "--rate", "5000")
	checkTicks(t, sub, 20)
	cancel()
	for _, b := range []*background{pipe, pub} {
		if c := b.wait(t); c != exitOK {
			t.Errorf("exit %d:\n%s", c, b.err)
		}
	}
	if !regexp.MustCompile(`forwarded [1-9]\d* messages, 0 gap markers`).MatchString(pipe.err.String()) {
		t.Errorf("pipe stderr:\n%s", pipe.err)
	}
}

// TestZmqProxyCommand: brokerless zmq proxy between a publisher and a
// subscriber that comes after both: the subscription travels to the
// publisher, what passes is counted, the counters are printed at the
// end.
func TestZmqProxyCommand(t *testing.T) {
	pctx, stopProxy := context.WithCancel(context.Background())
	defer stopProxy()
	px := startCLI(t, pctx, "(XPUB)", "zmq", "proxy", "--xsub", "tcp://127.0.0.1:0", "--xpub", "127.0.0.1:0")
	m := regexp.MustCompile(`publishers connect to tcp://(\S+) \(XSUB\), subscribers to tcp://(\S+) \(XPUB\)`).FindStringSubmatch(px.err.String())
	if m == nil {
		t.Fatalf("proxy stderr:\n%s", px.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := startCLI(t, ctx, "publishing to", "pub", "zmq+tcp://"+m[1]+"?mode=connect", "--ticks", "--rate", "5000")
	sub := startCLI(t, context.Background(), "listening on", "sub", "zmq+tcp://"+m[2]+"?subscribe=AAPL", "--count", "10")
	checkTicks(t, sub, 10)
	cancel()
	if c := pub.wait(t); c != exitOK {
		t.Errorf("pub exit %d:\n%s", c, pub.err)
	}
	stopProxy()
	if c := px.wait(t); c != exitOK {
		t.Fatalf("proxy exit %d:\n%s", c, px.err)
	}
	last := regexp.MustCompile(`proxy: forwarded (\d+) messages \(\d+ bytes\); dropped 0 for slow subscribers, 0 disconnected; subscriptions \+1 -[01] `).FindStringSubmatch(px.err.String())
	if last == nil {
		t.Fatalf("proxy's counters at the end:\n%s", px.err)
	}
	if n, _ := strconv.Atoi(last[1]); n < 10 {
		t.Errorf("proxy forwarded %d messages, the subscriber received 10:\n%s", n, px.err)
	}
}

// TestZmqPushPull: zmq push hands 200 tasks to two zmq pull workers:
// each task is printed by exactly one of them, both take part, and push
// exits once all are done.
func TestZmqPushPull(t *testing.T) {
	addr := "127.0.0.1:" + freeTCPPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var workers []*background
	for range 2 {
		workers = append(workers, startCLI(t, ctx, "taking tasks", "zmq", "pull", "--connect", addr))
	}
	code, _, errOut := runCLI(t, "", "zmq", "push", "--bind", addr, "--count", "200", "--workers", "2")
	if code != exitOK || !strings.Contains(errOut, "push: workers connect to tcp://"+addr) ||
		!strings.Contains(errOut, "push: 200 tasks, 200 done, 0 not done; 0 handed again") {
		t.Fatalf("push exit %d:\n%s", code, errOut)
	}
	cancel()
	seen := map[string]int{}
	total := 0
	for i, w := range workers {
		if c := w.wait(t); c != exitOK {
			t.Fatalf("worker %d exit %d:\n%s", i, c, w.err)
		}
		out := strings.TrimSuffix(w.out.String(), "\n")
		lines := strings.Split(out, "\n")
		if out == "" {
			t.Errorf("worker %d did no task:\n%s", i, w.err)
			lines = nil
		}
		for _, l := range lines {
			_, task, _ := strings.Cut(l, " - ")
			seen[task]++
		}
		total += len(lines)
		if !strings.Contains(w.err.String(), fmt.Sprintf("pull: %d tasks done", len(lines))) {
			t.Errorf("worker %d printed %d lines:\n%s", i, len(lines), w.err)
		}
	}
	for i := 1; i <= 200; i++ {
		if n := seen[fmt.Sprintf("task %d", i)]; n != 1 {
			t.Errorf("task %d printed %d times", i, n)
		}
	}
	if total != 200 {
		t.Errorf("%d lines printed for 200 tasks", total)
	}
}

// TestZmqPushFromStdin: zmq push reads its tasks from standard input; a
// pull worker with --count exits after that many.
func TestZmqPushFromStdin(t *testing.T) {
	addr := "127.0.0.1:" + freeTCPPort(t)
	w := startCLI(t, context.Background(), "taking tasks", "zmq", "pull", "--connect", "tcp://"+addr, "--count", "3", "--credit", "2")
	code, _, errOut := runCLI(t, "resize a.png\nresize b.png\nresize c.png\n", "zmq", "push", "--bind", addr, "--topic", "img")
	if code != exitOK || !strings.Contains(errOut, "push: 3 tasks, 3 done") {
		t.Fatalf("push exit %d:\n%s", code, errOut)
	}
	if c := w.wait(t); c != exitOK || w.out.String() != "1 img resize a.png\n2 img resize b.png\n3 img resize c.png\n" || !strings.Contains(w.err.String(), "pull: 3 tasks done") {
		t.Errorf("pull exit %d, printed %q:\n%s", c, w.out, w.err)
	}
}

// TestZmqPushInterrupted: interrupted while no worker takes its tasks,
// zmq push exits 0 saying how many were not done.
func TestZmqPushInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := startCLI(t, ctx, "workers connect to", "zmq", "push", "--bind", "127.0.0.1:0", "--count", "5")
	cancel()
	c := b.wait(t)
	m := regexp.MustCompile(`push: (\d) tasks, 0 done, (\d) not done`).FindStringSubmatch(b.err.String())
	if c != exitOK || m == nil || m[1] != m[2] {
		t.Errorf("exit %d:\n%s", c, b.err)
	}
}

// TestZmqFlagErrors: every bad flag value of the zmq commands exits 2
// naming the flag, before anything listens.
func TestZmqFlagErrors(t *testing.T) {
	const sub, pub = "--xsub=127.0.0.1:0", "--xpub=127.0.0.1:0"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"zmq", "proxy", pub}, "--xsub is required"},
		{[]string{"zmq", "proxy", sub}, "--xpub is required"},
		{[]string{"zmq", "proxy", sub, "--xpub", "udp://1.2.3.4:5"}, "--xpub udp://1.2.3.4:5: want tcp://HOST:PORT, HOST:PORT or ipc://PATH"},
		{[]string{"zmq", "proxy", "--xsub", "tcp://nohostport", pub}, `--xsub tcp://nohostport: endpoint "tcp://nohostport": want tcp://HOST:PORT`},
		{[]string{"zmq", "proxy", sub, pub, "--hwm", "0"}, "--hwm 0: want at least 1"},
		{[]string{"zmq", "proxy", sub, pub, "--slow", "maybe"}, `--slow "maybe": want drop or disconnect`},
		{[]string{"zmq", "proxy", sub, pub, "--interval", "-1s"}, "--interval -1s: want a positive duration"},
		{[]string{"zmq", "proxy", sub, pub, "extra"}, `unexpected argument "extra"`},
		{[]string{"zmq", "push"}, "give --bind or --connect"},
		{[]string{"zmq", "push", "--bind", "127.0.0.1"}, `--bind tcp://127.0.0.1: endpoint "tcp://127.0.0.1": want tcp://HOST:PORT`},
		{[]string{"zmq", "push", "--bind", ":0", "--connect", "x://y"}, "--connect x://y: want"},
		{[]string{"zmq", "push", "--bind", ":0", "--count", "0"}, "--count 0: want a positive number"},
		{[]string{"zmq", "push", "--bind", ":0", "--workers", "-2"}, "--workers -2: want a positive number"},
		{[]string{"zmq", "push", "--bind", ":0", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"zmq", "pull"}, "give --connect or --bind"},
		{[]string{"zmq", "pull", "--connect", ":1", "--credit", "0"}, "--credit 0: want 1..1000"},
		{[]string{"zmq", "pull", "--connect", ":1", "--credit", "1001"}, "--credit 1001: want 1..1000"},
		{[]string{"zmq", "pull", "--connect", ":1", "--count", "-1"}, "--count -1: want a positive number"},
		{[]string{"zmq", "pull", "--connect", ":1", "--work", "-5ms"}, "--work -5ms: want a positive duration"},
		{[]string{"zmq", "pull", "--connect", "ipc://"}, "--connect ipc://: "},
		{[]string{"zmq", "pull", "--connect", ":5557"}, "--connect tcp://:5557: a connected endpoint needs a host and a port from 1 to 65535"},
		{[]string{"zmq", "pull", "--connect", "127.0.0.1:0"}, "--connect tcp://127.0.0.1:0: a connected endpoint needs a host"},
		{[]string{"zmq", "push", "--connect", "tcp://*:5557"}, "--connect tcp://*:5557: a connected endpoint needs a host"},
		{[]string{"zmq", "proxy", "--xsub", "127.0.0.1:99999", pub}, "--xsub tcp://127.0.0.1:99999: want a port from 0 to 65535"},
	}
	for _, tt := range tests {
		// A command that starts instead of refusing is stopped after a
		// while, and then exits 0.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var stdout, stderr strings.Builder
		code := run(ctx, tt.args, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr})
		cancel()
		out, errOut := stdout.String(), stderr.String()
		if code != exitUsage || out != "" {
			t.Errorf("%v: exit %d, stdout %q, want exit %d; stderr:\n%s", tt.args, code, out, exitUsage, errOut)
		}
		cmd, _ := lookup(tt.args)
		for _, want := range []string{"brokerless " + cmd.name + ": ", tt.want} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", tt.args, want, errOut)
			}
		}
		if strings.Contains(errOut, "connect to") || strings.Contains(errOut, "listening") {
			t.Errorf("%v: started before refusing:\n%s", tt.args, errOut)
		}
	}
}

// TestZmqURLBadValues: bad zmq+tcp:// URLs are one line of error and
// exit 2 for pub, sub and pipe alike.
func TestZmqURLBadValues(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"zmq+tcp://127.0.0.1", `bad URL "zmq+tcp://127.0.0.1": "127.0.0.1": want HOST:PORT`},
		{"zmq+tcp://127.0.0.1:5556?hwm=0", `hwm="0": want 1..16777216`},
		{"zmq+tcp://127.0.0.1:5556?slow=later", `slow="later": want drop or disconnect`},
		{"zmq+tcp://127.0.0.1:5556?colour=red", `unknown parameter "colour"`},
		{"zmq+ipc://relative/path", "want zmq+ipc:///ABSOLUTE/PATH"},
		{"zmq+tcp://127.0.0.1:0?mode=connect", `bad URL "zmq+tcp://127.0.0.1:0?mode=connect": tcp://127.0.0.1:0: a connected endpoint needs a host and a port from 1 to 65535`},
		{"zmq+tcp://:5556?mode=connect", `bad URL "zmq+tcp://:5556?mode=connect": tcp://:5556: a connected endpoint needs a host`},
	} {
		for _, args := range [][]string{{"pub", c.url}, {"sub", c.url}, {"pipe", c.url, "zmq+tcp://127.0.0.1:5557"}} {
			// A command that starts instead of refusing is stopped after
			// a while.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			var stdout, stderr strings.Builder
			code := run(ctx, args, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr})
			cancel()
			out, errOut := stdout.String(), stderr.String()
			if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", args, code, out, errOut, c.want)
			}
		}
	}
}
