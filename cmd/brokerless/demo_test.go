package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

func TestDemoDeliversEverything(t *testing.T) {
	var out bytes.Buffer
	o := demoOptions{duration: time.Second, rate: 20000, seed: 1, drain: defaultDrain}
	res, err := runDemo(context.Background(), o, &out)
	if err != nil {
		t.Fatalf("runDemo: %v\n%s", err, &out)
	}
	if res.published != 20000 {
		t.Errorf("published %d, want 20000", res.published)
	}
	if ps := res.problems(); len(ps) > 0 {
		t.Errorf("problems: %q\n%s", ps, &out)
	}
	if len(res.subs) != 3 {
		t.Fatalf("%d subscribers", len(res.subs))
	}
	for _, s := range res.subs {
		if s.tally.delivered != res.published || s.tally.gaps != 0 || s.tally.disorder != 0 {
			t.Errorf("%s: %+v", s.profile.name, s.tally)
		}
		if s.tally.lat.Count() != s.tally.delivered {
			t.Errorf("%s: %d latencies for %d messages", s.profile.name, s.tally.lat.Count(), s.tally.delivered)
		}
	}
	if lossy := res.subs[2]; lossy.stats.FilterDrops == 0 || lossy.stats.Recovered == 0 || lossy.stats.NacksSent == 0 {
		t.Errorf("the 20%% subscriber lost nothing or recovered nothing: %+v", lossy.stats)
	}
	text := out.String()
	for _, want := range []string{"demo: 1 publisher -> 3 subscribers on 239.255.", "p99.9", "loss-20%", "publisher: 20000 messages", "OK: all 3 subscribers delivered all 20000 messages"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	t.Logf("\n%s", text)
}

func TestDemoCommandExitsZero(t *testing.T) {
	code, out, errOut := runCLI(t, "", "demo", "--duration", "200ms", "--rate", "5000")
	if code != exitOK || !strings.Contains(out, "OK: ") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestDemoInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	_, err := runDemo(ctx, demoOptions{duration: time.Hour, rate: 1000, drain: defaultDrain}, &out)
	if err != errInterrupted {
		t.Errorf("err = %v, want errInterrupted", err)
	}
}

func TestTallyChecksSequence(t *testing.T) {
	id := transport.StreamID{Feed: 1, Session: 9}
	msg := func(seq uint64) transport.Event {
		return transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: id, Seq: seq}}
	}
	now := time.Now()
	tl := newTally()
	for _, ev := range []transport.Event{
		{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: id, FirstSeq: 1}},
		msg(1), msg(2),
		{Kind: transport.EventGap, Gap: transport.Gap{Stream: id, From: 3, To: 5, Reason: transport.GapTimeout}},
		msg(6), msg(8), // 7 went missing without a gap
		{Kind: transport.EventStreamEnd, End: transport.StreamEnd{Stream: id, LastSeq: 8}},
	} {
		tl.add(&ev, now)
	}
	if tl.delivered != 4 || tl.gaps != 1 || tl.lostSeqs != 3 || tl.disorder != 1 || !tl.ended {
		t.Errorf("tally %+v", tl)
	}
	if len(tl.firstGaps) != 1 || !strings.Contains(tl.firstGaps[0], "seq 3..5 (3 lost)") {
		t.Errorf("gap lines %q", tl.firstGaps)
	}
}

func TestTallyComplete(t *testing.T) {
	tl := newTally()
	tl.delivered, tl.lostSeqs = 90, 10
	if !tl.complete(100) || tl.complete(101) {
		t.Error("complete counts delivered plus lost")
	}
	tl.ended = true
	if !tl.complete(1000) {
		t.Error("an ended stream is complete")
	}
}

func TestDemoProblems(t *testing.T) {
	r := demoResult{published: 100, subs: []subResult{
		{profile: demoProfile{name: "a"}, tally: tally{delivered: 100}},
		{profile: demoProfile{name: "b"}, tally: tally{delivered: 90, gaps: 1, lostSeqs: 10, firstGaps: []string{"gap x"}}},
	}}
	got := strings.Join(r.problems(), "\n")
	for _, want := range []string{"b: delivered 90 of 100 messages", "b: 1 gaps lost 10 messages", "b:   gap x"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "a:") {
		t.Errorf("a complete subscriber is blamed:\n%s", got)
	}
}

// TestDemoUsageNamesItsFlags: demo takes only a few flags, so its usage
// line names each of them.
func TestDemoUsageNamesItsFlags(t *testing.T) {
	code, out, _ := runCLI(t, "", "demo", "--help")
	usage, flags, ok := strings.Cut(out, "FLAGS:")
	if code != exitOK || !ok {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	usage, _, _ = strings.Cut(usage, "\n\n")
	flags, _, _ = strings.Cut(flags, "EXAMPLES:")
	for _, line := range strings.Split(flags, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "--") {
			continue
		}
		if !strings.Contains(usage, f[0]+" ") {
			t.Errorf("usage %q does not name %s", strings.TrimSpace(usage), f[0])
		}
	}
}
