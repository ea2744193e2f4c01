package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// brokerDownWait bounds how long a sub may take to say that it cannot
// reach its broker: the client retries a connection within a second or
// so, and its first failure is logged at once.
const brokerDownWait = 20 * time.Second

// awaitText waits until w holds text, for at most brokerDownWait.
func awaitText(t *testing.T, w *syncBuffer, text string) {
	t.Helper()
	deadline := time.Now().Add(brokerDownWait)
	for !strings.Contains(w.String(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr within %v:\n%s", text, brokerDownWait, w)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSubBrokerDown: a sub whose broker goes away says so on standard
// error — the client retries by itself, and no call returns the
// failure — and prints nothing on standard output.
func TestSubBrokerDown(t *testing.T) {
	logdCtx, stopBroker := context.WithCancel(context.Background())
	addr, _, logdDone := startLogd(t, logdCtx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := newSyncBuffer(""), newSyncBuffer("listening on")
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"sub", "logd://" + addr + "/down"}, stdio{in: strings.NewReader(""), out: out, err: errOut})
	}()
	select {
	case <-errOut.seen:
	case c := <-code:
		t.Fatalf("sub exited with %d before listening:\n%s", c, errOut)
	case <-time.After(brokerDownWait):
		t.Fatalf("sub did not start listening:\n%s", errOut)
	}
	stopLogd(t, stopBroker, logdDone)
	awaitText(t, errOut, "unable to open connection to broker")
	if !strings.Contains(errOut.String(), "addr="+addr) {
		t.Errorf("the diagnostic does not name the broker %s:\n%s", addr, errOut)
	}
	cancel()
	select {
	case <-code:
	case <-time.After(brokerDownWait):
		t.Fatalf("sub did not exit:\n%s", errOut)
	}
	if out.String() != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
}

// TestSubClosedPort: a sub of a broker that is not there fails at once,
// saying why on standard error, with nothing on standard output.
func TestSubClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), brokerDownWait)
	defer cancel()
	var out, errOut strings.Builder
	c := run(ctx, []string{"sub", "logd://" + addr + "/t"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	if c != exitFailure || out.String() != "" || !strings.Contains(errOut.String(), "connection refused") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, and connection refused on stderr", c, out.String(), errOut.String())
	}
	// sub --help says so, and does not promise retries at start.
	_, help, _ := runCLI(t, "", "sub", "--help")
	if flat := strings.Join(strings.Fields(help), " "); !strings.Contains(flat, "cannot be reached at start ends the command with status 1") {
		t.Errorf("sub --help does not say that a broker unreachable at start ends the command with status 1:\n%s", help)
	}
}
