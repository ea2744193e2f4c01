package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLogdCommand: the command prints where it listens, serves a Kafka
// client, and shuts down cleanly when its context ends (SIGTERM).
func TestLogdCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := newSyncBuffer(""), newSyncBuffer("logd http on")
	inv := &invocation{cmd: &logdCmd, stdio: stdio{in: strings.NewReader(""), out: out, err: errOut}, log: newLogger(errOut),
		args: []string{"--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auto-create"}}
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.AllowAutoTopicCreation())
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

func TestLogdCommandNeedsDir(t *testing.T) {
	inv := &invocation{cmd: &logdCmd, stdio: stdio{in: strings.NewReader(""), out: newSyncBuffer(""), err: newSyncBuffer("")}, log: newLogger(newSyncBuffer(""))}
	if err := logdCmd.run(context.Background(), inv); err == nil || !strings.Contains(err.Error(), "--dir") {
		t.Fatalf("%v", err)
	}
}
