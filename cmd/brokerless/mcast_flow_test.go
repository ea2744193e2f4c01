package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A publisher holding its first message for --flow-min subscribers says
// so on start: run alone, as its example is, it must not look hung.
func TestMcastPubSaysItWaitsForFlowMin(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--flow", "min", "--flow-min", "2"}, "; waiting for 2 subscribers to report before the first message"},
		{[]string{"--flow", "tagged", "--flow-tag", "7", "--flow-min", "1"}, "; waiting for 1 subscriber with flow-tag 7 to report before the first message"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		errOut := newSyncBuffer(tc.want)
		code := make(chan int, 1)
		args := append([]string{"mcast", "pub", "--group", testGroup(), "--ttl", "0", "--ticks"}, tc.flags...)
		go func() {
			code <- run(ctx, args, stdio{in: strings.NewReader(""), out: &strings.Builder{}, err: errOut})
		}()
		select {
		case <-errOut.seen:
		case c := <-code:
			t.Fatalf("%v: exited with %d before saying it waits:\n%s", tc.flags, c, errOut)
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: no line says the publisher waits for subscribers:\n%s", tc.flags, errOut)
		}
		cancel()
		select {
		case <-code:
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: did not exit once interrupted:\n%s", tc.flags, errOut)
		}
	}
}

func TestMcastPubStartLineWithoutFlowMin(t *testing.T) {
	code, _, errOut := runCLI(t, "x\n", "mcast", "pub", "--group", testGroup(), "--ttl", "0", "--flow", "min")
	if code != exitOK || strings.Contains(errOut, "waiting for") {
		t.Fatalf("exit %d; a publisher without --flow-min says it waits:\n%s", code, errOut)
	}
}
