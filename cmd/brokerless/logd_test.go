package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// startLogd runs `brokerless logd` with args until the test ends and
// returns its Kafka address, its stderr and the channel its result
// arrives on.
func startLogd(t *testing.T, ctx context.Context, args ...string) (string, *syncBuffer, chan error) {
	t.Helper()
	out, errOut := newSyncBuffer(""), newSyncBuffer("logd http on")
	inv := &invocation{cmd: &logdCmd, stdio: stdio{in: strings.NewReader(""), out: out, err: errOut}, log: newLogger(errOut), args: args}
	done := make(chan error, 1)
	go func() { done <- logdCmd.run(ctx, inv) }()
	select {
	case <-errOut.seen:
	case err := <-done:
		t.Fatalf("logd ended: %v\n%s", err, errOut)
	case <-time.After(10 * time.Second):
		t.Fatalf("logd did not start:\n%s", errOut)
	}
	m := regexp.MustCompile(`logd listening on (127\.0\.0\.1:\d+) \(Kafka protocol\)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("no listening line:\n%s", errOut)
	}
	return m[1], errOut, done
}

// TestLogdCommand: the command prints where it listens, serves a Kafka
// client, and shuts down cleanly when its context ends (SIGTERM).
func TestLogdCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, _, done := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auto-create")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cli", Value: []byte("hi")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("logd did not shut down")
	}
}

// TestLogdSecondOnSameDir: a second logd on a directory in use exits 1,
// naming the directory and the running logd's pid, before it listens.
func TestLogdSecondOnSameDir(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	startLogd(t, ctx, "--dir", dir, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	second, stop := context.WithTimeout(ctx, 5*time.Second) // ends it, were it to start
	defer stop()
	var stdout, stderr bytes.Buffer
	code := run(second, []string{"logd", "--dir", dir, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr})
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailure, &stderr)
	}
	want := fmt.Sprintf("brokerless logd: logd: data directory %s is in use by another logd (pid %d)", dir, os.Getpid())
	if !strings.Contains(stderr.String(), want) || strings.Contains(stdout.String()+stderr.String(), "listening") {
		t.Fatalf("stderr %q, want %q and no listening line", stderr.String(), want)
	}
}

func TestLogdCommandNeedsDir(t *testing.T) {
	inv := &invocation{cmd: &logdCmd, stdio: stdio{in: strings.NewReader(""), out: newSyncBuffer(""), err: newSyncBuffer("")}, log: newLogger(newSyncBuffer(""))}
	if err := logdCmd.run(context.Background(), inv); err == nil || !strings.Contains(err.Error(), "--dir") {
		t.Fatalf("%v", err)
	}
}
