package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testGroup is a random group in 239.255.0.0/16 with a random port below
// the ephemeral ports (32768+), which wildcard-bound UDP sockets take.
func testGroup() string {
	return fmt.Sprintf("239.255.%d.%d:%d", rand.IntN(256), 1+rand.IntN(254), 20000+rand.IntN(12768))
}

// startSub runs "mcast sub" with args in the background until it has
// joined, and returns its stdout, stderr and a channel of its exit status.
func startSub(t *testing.T, ctx context.Context, args ...string) (out, errOut *syncBuffer, code <-chan int) {
	t.Helper()
	out, errOut = newSyncBuffer(""), newSyncBuffer("listening on")
	c := make(chan int, 1)
	go func() {
		c <- run(ctx, append([]string{"mcast", "sub"}, args...), stdio{in: strings.NewReader(""), out: out, err: errOut})
	}()
	select {
	case <-errOut.seen:
	case code := <-c:
		t.Fatalf("sub exited with %d before listening:\n%s", code, errOut)
	case <-time.After(10 * time.Second):
		t.Fatalf("sub did not start listening:\n%s", errOut)
	}
	return out, errOut, c
}

func waitExit(t *testing.T, code <-chan int, errOut *syncBuffer) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("sub did not exit:\n%s", errOut)
		return -1
	}
}

func TestPubLinesToSub(t *testing.T) {
	g := testGroup()
	out, errOut, code := startSub(t, context.Background(), "--group", g, "--count", "4")
	pubCode, _, pubErr := runCLI(t, "hello\nworld\n\x01\x02\nlast line\n", "mcast", "pub", "--group", g, "--ttl", "0", "--topic", "greet")
	if pubCode != exitOK {
		t.Fatalf("pub exit %d:\n%s", pubCode, pubErr)
	}
	if c := waitExit(t, code, errOut); c != exitOK {
		t.Fatalf("sub exit %d:\n%s", c, errOut)
	}
	want := "1 greet hello\n2 greet world\n3 greet 0102\n4 greet last line\n"
	if got := out.String(); got != want {
		t.Errorf("sub printed\n%s\nwant\n%s", got, want)
	}
	for _, w := range []string{"publishing to " + g + " on lo from 127.0.0.1:", "published 4 messages"} {
		if !strings.Contains(pubErr, w) {
			t.Errorf("pub stderr lacks %q:\n%s", w, pubErr)
		}
	}
	for _, w := range []string{"listening on " + g + " on lo", "stream start 1/", "received 4 messages"} {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("sub stderr lacks %q:\n%s", w, errOut)
		}
	}
}

func TestPubTicksToLossySub(t *testing.T) {
	g := testGroup()
	const n = 3000
	_, errOut, code := startSub(t, context.Background(), "--group", g, "--feed", "9", "--count", fmt.Sprint(n),
		"--stats", "--interval", "1h", "--simulate-loss", "0.1", "--seed", "5")
	pubCode, _, pubErr := runCLI(t, "", "mcast", "pub", "--group", g, "--feed", "9", "--ttl", "0",
		"--ticks", "--rate", "30000", "--count", fmt.Sprint(n), "--mtu", "512")
	if pubCode != exitOK {
		t.Fatalf("pub exit %d:\n%s", pubCode, pubErr)
	}
	if c := waitExit(t, code, errOut); c != exitOK {
		t.Fatalf("sub exit %d:\n%s", c, errOut)
	}
	summary := errOut.String()
	if !strings.Contains(summary, fmt.Sprintf("received %d messages", n)) || !strings.Contains(summary, "gaps 0 (0 lost)") {
		t.Errorf("sub did not receive all without gaps:\n%s", summary)
	}
	if !strings.Contains(pubErr, fmt.Sprintf("published %d messages", n)) {
		t.Errorf("pub stderr:\n%s", pubErr)
	}
}

func TestSubEndsCleanlyWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, errOut, code := startSub(t, ctx, "--group", testGroup())
	cancel()
	if c := waitExit(t, code, errOut); c != exitOK {
		t.Fatalf("sub exit %d after interrupt:\n%s", c, errOut)
	}
	if !strings.Contains(errOut.String(), "received 0 messages") {
		t.Errorf("stderr:\n%s", errOut)
	}
}

// TestSubUntilEnd: with --until-end, mcast sub exits once the publisher
// closed its stream; without it (TestSubEndsCleanlyWhenInterrupted) it
// keeps listening for the feed's next publisher.
func TestSubUntilEnd(t *testing.T) {
	g := testGroup()
	out, errOut, code := startSub(t, context.Background(), "--group", g, "--until-end")
	pubCode, _, pubErr := runCLI(t, "one\ntwo\n", "mcast", "pub", "--group", g, "--ttl", "0")
	if pubCode != exitOK {
		t.Fatalf("pub exit %d:\n%s", pubCode, pubErr)
	}
	if c := waitExit(t, code, errOut); c != exitOK {
		t.Fatalf("sub exit %d:\n%s", c, errOut)
	}
	if got, want := out.String(), "1 - one\n2 - two\n"; got != want {
		t.Errorf("sub printed %q, want %q", got, want)
	}
	for _, w := range []string{"after seq 2: closed by publisher", "received 2 messages"} {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("sub stderr lacks %q:\n%s", w, errOut)
		}
	}
}

// TestKeyFile: publisher and subscriber sharing --key-file talk; a bad
// key file is a bad flag value.
func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "feed.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := testGroup()
	out, errOut, code := startSub(t, context.Background(), "--group", g, "--key-file", key, "--count", "2")
	pubCode, _, pubErr := runCLI(t, "one\ntwo\n", "mcast", "pub", "--group", g, "--ttl", "0", "--key-file", key)
	if pubCode != exitOK || !strings.Contains(pubErr, "datagrams authenticated") {
		t.Fatalf("pub exit %d:\n%s", pubCode, pubErr)
	}
	if c := waitExit(t, code, errOut); c != exitOK || out.String() != "1 - one\n2 - two\n" {
		t.Fatalf("sub exit %d, printed %q:\n%s", c, out, errOut)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"mcast", "pub", "--group", g, "--key-file", short},
		{"mcast", "sub", "--group", g, "--key-file", filepath.Join(dir, "missing")},
	} {
		c, _, e := runCLI(t, "", args...)
		if c != exitUsage || !strings.Contains(e, "--key-file "+args[len(args)-1]+": ") {
			t.Errorf("%v: exit %d:\n%s", args, c, e)
		}
	}
}
