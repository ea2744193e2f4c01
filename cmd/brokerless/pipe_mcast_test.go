package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestPipeLogdToMcast: `brokerless pipe logd://… mcast://…` forwards a
// topic's records to a multicast group in batches (the multicast
// publisher's PublishReceipts): a subscriber gets every one, in order,
// and the pipe acknowledges them all.
func TestPipeLogdToMcast(t *testing.T) {
	const n = 5000
	ctx, cancel := context.WithCancel(context.Background())
	addr, _, done := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	defer stopLogd(t, cancel, done)
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "line %05d\n", i)
	}
	src := "logd://" + addr + "/src"
	if code, _, errOut := runCLI(t, in.String(), "pub", src); code != exitOK {
		t.Fatalf("pub exit %d:\n%s", code, errOut)
	}
	group := "mcast://" + testGroup() + "?ttl=0"
	sub := startCLI(t, context.Background(), "listening on", "sub", group, "--count", fmt.Sprint(n))
	pctx, stop := context.WithCancel(context.Background())
	defer stop()
	pipe := startCLI(t, pctx, "piping", "pipe", src+"?group=relay", group)
	if c := sub.wait(t); c != exitOK {
		t.Fatalf("sub exit %d:\n%s", c, sub.err)
	}
	stop()
	if c := pipe.wait(t); c != exitOK {
		t.Errorf("pipe exit %d:\n%s", c, pipe.err)
	}
	lines := strings.Split(strings.TrimSuffix(sub.out.String(), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("sub printed %d lines, want %d:\n%s", len(lines), n, sub.err)
	}
	for i, l := range lines {
		if !strings.HasSuffix(l, fmt.Sprintf("line %05d", i)) {
			t.Fatalf("line %d: %q", i, l)
		}
	}
	for _, w := range []string{fmt.Sprintf("received %d messages;", n), "gaps 0 (0 lost)"} {
		if !strings.Contains(sub.err.String(), w) {
			t.Errorf("sub stderr lacks %q:\n%s", w, sub.err)
		}
	}
	if w := fmt.Sprintf("forwarded %d messages", n); !strings.Contains(pipe.err.String(), w) {
		t.Errorf("pipe stderr lacks %q:\n%s", w, pipe.err)
	}
}
