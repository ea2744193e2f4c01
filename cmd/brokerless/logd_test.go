package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// stopLogd ends a logd that startLogd started with a context cancel
// ends (as SIGTERM does), and waits for it to shut down cleanly.
func stopLogd(t *testing.T, cancel context.CancelFunc, done chan error) {
	t.Helper()
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
	stopLogd(t, cancel, done)
}

// TestLogdMaxOffsetBytes: --max-offset-bytes reaches the store: a
// commit past it is refused with INVALID_COMMIT_OFFSET_SIZE.
func TestLogdMaxOffsetBytes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, _, done := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--max-offset-bytes", "4096")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cli", Value: []byte("hi")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commit := func(meta string) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "g", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "cli"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = 1, &meta
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err := commit(""); err != nil {
		t.Fatalf("a small commit: %v", err)
	}
	if err := commit(strings.Repeat("m", 4000)); !errors.Is(err, kerr.InvalidCommitOffsetSize) {
		t.Fatalf("a commit past --max-offset-bytes: %v, want INVALID_COMMIT_OFFSET_SIZE", err)
	}
	stopLogd(t, cancel, done)
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

// TestLogdBadFlags: every bad flag value exits 2 with a message naming
// the flag and what it allows, before logd listens or creates its data
// directory.
func TestLogdBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--http", "127.0.0.1:99999"}, "--http 127.0.0.1:99999: want host:port, port in [0, 65535]"},
		{[]string{"--listen", "127.0.0.1:99999"}, "--listen 127.0.0.1:99999: want host:port"},
		{[]string{"--listen", "127.0.0.1"}, "--listen 127.0.0.1: want host:port"},
		{[]string{"--advertise", "host:abc"}, "--advertise host:abc: port must be a number in [1, 65535]"},
		{[]string{"--advertise", "host:0"}, "--advertise host:0: port must be a number in [1, 65535]"},
		{[]string{"--advertise", ":9092"}, "--advertise :9092: want host:port"},
		{[]string{"--advertise", "host"}, "--advertise host: want host:port"},
		{[]string{"--partitions", "0"}, "--partitions 0: must be ≥ 1"},
		{[]string{"--partitions", "-3"}, "--partitions -3: must be ≥ 1"},
		{[]string{"--partitions", "x"}, `invalid argument "x" for "--partitions" flag`},
		{[]string{"--max-request-bytes", "0"}, "--max-request-bytes 0: must be ≥ 1024"},
		{[]string{"--max-request-bytes", "100"}, "--max-request-bytes 100: must be ≥ 1024"},
		{[]string{"--max-inflight-request-bytes", "0"}, "--max-inflight-request-bytes 0: must be ≥ 2 × --max-request-bytes"},
		{[]string{"--max-inflight-request-bytes", "1000000"}, "--max-inflight-request-bytes 1000000: must be ≥ 2 × the largest request (209715200)"},
		{[]string{"--request-timeout", "0"}, "--request-timeout 0s: must be > 0"},
		{[]string{"--request-timeout", "-1s"}, "--request-timeout -1s: must be > 0"},
		{[]string{"--max-connections", "0"}, "--max-connections 0: must be ≥ 1"},
		{[]string{"--max-connections", "-5"}, "--max-connections -5: must be ≥ 1"},
		{[]string{"--max-connections-per-ip", "0"}, "--max-connections-per-ip 0: must be ≥ 1"},
		{[]string{"--max-connections-per-ip", "-1"}, "--max-connections-per-ip -1: must be ≥ 1"},
		{[]string{"--idle-timeout", "0s"}, "--idle-timeout 0s: must be > 0"},
		{[]string{"--idle-timeout", "-1m"}, "--idle-timeout -1m0s: must be > 0"},
		{[]string{"--max-unauthenticated-request-bytes", "0"}, "--max-unauthenticated-request-bytes 0: must be in [1024, --max-request-bytes]"},
		{[]string{"--max-unauthenticated-request-bytes", "1000"}, "--max-unauthenticated-request-bytes 1000: must be in [1024, MaxRequestBytes (104857600)]"},
		{[]string{"--max-rebalance-timeout", "0"}, "--max-rebalance-timeout 0s: must be ≥ 6s"},
		{[]string{"--max-rebalance-timeout", "1s"}, "--max-rebalance-timeout 1s: must be ≥ the minimum session timeout (6s)"},
		{[]string{"--fsync", "sometimes"}, "--fsync sometimes: must be always, interval or never"},
		{[]string{"--fsync-interval", "0"}, "--fsync-interval 0s: must be > 0"},
		{[]string{"--retention", "0"}, "--retention 0s: must be > 0, or negative for never"},
		{[]string{"--retention", "5"}, `invalid argument "5" for "--retention" flag`},
		{[]string{"--retention-bytes", "0"}, "--retention-bytes 0: must be ≥ 1, or negative for no limit"},
		{[]string{"--segment-bytes", "0"}, "--segment-bytes 0: must be in [1024, 1073741824]"},
		{[]string{"--segment-age", "0s"}, "--segment-age 0s: must be > 0, or negative for never"},
		{[]string{"--offsets-retention", "0"}, "--offsets-retention 0s: must be > 0, or negative for never"},
		{[]string{"--offsets-retention", "1us"}, "--offsets-retention 1µs: must be ≥ 1ms"},
		{[]string{"--offsets-retention", "7"}, `invalid argument "7" for "--offsets-retention" flag`},
		{[]string{"--max-offset-bytes", "0"}, "--max-offset-bytes 0: must be ≥ 1"},
		{[]string{"--max-offset-bytes", "-1"}, "--max-offset-bytes -1: must be >= 1"},
		{[]string{"--fsync-interval", "-1s"}, "--fsync-interval -1s"},
		{[]string{"--segment-bytes", "100"}, "--segment-bytes 100"},
		{[]string{"--segment-bytes", "2147483648"}, "--segment-bytes 2147483648"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"logd", "--dir", dir, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // ends it, were it to start
			defer cancel()
			var out, errOut bytes.Buffer
			code := run(ctx, args, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
			stdout, stderr := out.String(), errOut.String()
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, exitUsage, stderr)
			}
			if strings.Contains(stdout+stderr, "listening") {
				t.Fatalf("printed a listening line before refusing:\n%s", stderr)
			}
			if !strings.Contains(stderr, "brokerless logd: "+tc.want) {
				t.Fatalf("stderr %q, want %q", stderr, tc.want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the data directory was created (or %v) before the flags were checked", err)
			}
		})
	}
}

// TestLogdNeverValues: a negative --retention, --segment-age or
// --retention-bytes means never / no limit (-1), with or without a unit.
func TestLogdNeverValues(t *testing.T) {
	for _, in := range []string{"-1", "-1ns", "-5h", "-2"} {
		var d time.Duration
		if err := (durationOrNever{&d}).Set(in); err != nil || d != -1 {
			t.Errorf("%s: %v %v, want -1", in, d, err)
		}
	}
	var d time.Duration
	if err := (durationOrNever{&d}).Set("90m"); err != nil || d != 90*time.Minute {
		t.Errorf("90m: %v %v", d, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--retention", "-1", "--segment-age", "-1ns", "--retention-bytes", "-7", "--offsets-retention", "-1")
}
