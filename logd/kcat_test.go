package logd

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/peertest"
)

// kcatPath finds Debian's kcat: the test skips without it, unless
// BROKERLESS_INTEROP=1, where a missing peer fails.
func kcatPath(t *testing.T) string {
	t.Helper()
	return peertest.LookPath(t, "kcat", "apt-get install kcat (.ci/install.d/30-logd.sh)")
}

// kcat runs kcat against the server with stdin, failing the test on an
// error exit.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, stderr, err := kcatTry(t, stdin, args...)
	if err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, stderr)
	}
	return out
}

// kcatFails runs kcat, which is expected to fail, and returns its
// stderr and exit error.
func kcatFails(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	_, stderr, err := kcatTry(t, stdin, args...)
	return stderr, err
}

// kcatTry runs kcat with stdin and returns its output, its stderr and
// its exit error; the test fails if it runs for a minute.
func kcatTry(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %v still running after a minute", args)
	}
	return out.String(), errb.String(), err
}

// TestKcatProduceConsume: kcat -P then kcat -C (ListOffsets + Fetch, no
// group) round-trip, with keys, through librdkafka.
func TestKcatProduceConsume(t *testing.T) {
	kcatPath(t)
	ts := startServer(t, t.TempDir())
	createTopic(t, newClient(t, ts.addr), "lines", 2)
	var in strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&in, "k%d:value %d\n", i%10, i)
	}
	kcat(t, in.String(), "-b", ts.addr, "-t", "lines", "-P", "-K:", "-X", "acks=all")
	out := kcat(t, "", "-b", ts.addr, "-t", "lines", "-C", "-o", "beginning", "-e", "-f", "%k=%s\n")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 500 {
		t.Fatalf("kcat consumed %d lines, want 500:\n%s", len(lines), out[:min(len(out), 500)])
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	for i := 0; i < 500; i++ {
		if want := fmt.Sprintf("k%d=value %d", i%10, i); !seen[want] {
			t.Fatalf("missing %q", want)
		}
	}
}

// TestKcatGroup: kcat -G consumes as a group member (JoinGroup,
// SyncGroup, Heartbeat, OffsetCommit, OffsetFetch through librdkafka);
// a second run of the same group resumes after the committed offsets.
func TestKcatGroup(t *testing.T) {
	kcatPath(t)
	ts := startServer(t, t.TempDir(), func(c *Config) { c.MinSessionTimeout = time.Second })
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "jobs", 1)
	produceN(t, cl, "jobs", "first", 20)
	run := func() []string {
		// auto.offset.reset, not -o: with -G, kcat's -o overrides the
		// committed offsets.
		out := kcat(t, "", "-b", ts.addr, "-G", "workers", "jobs", "-e", "-X", "auto.offset.reset=earliest",
			"-X", "auto.commit.interval.ms=100", "-X", "session.timeout.ms=6000", "-f", "%s\n")
		return strings.Fields(out)
	}
	first := run()
	if len(first) != 20 || first[0] != "first-0" {
		t.Fatalf("first group run read %d: %v", len(first), first)
	}
	produceN(t, cl, "jobs", "second", 5)
	second := run()
	if len(second) != 5 || second[0] != "second-0" {
		t.Fatalf("second group run read %v, want only the 5 new records", second)
	}
}
