package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestDemoArchive: `brokerless demo archive` with no flag exits 0 and says nothing was lost;
// each of its three subscribers took messages from the archive: the
// lossy one the dead session's tail, the stalled one what the window no
// longer held, the late one its history.
func TestDemoArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5 s demo")
	}
	if raceEnabled {
		// Under the race detector, on 2 cores, the recorder in the same
		// process loses what it must record at the rate that shows the
		// stall (20,000/s), and at rates it keeps up with (2,000/s) the
		// stalled subscriber's buffers hold its stall: the properties
		// are TestArchive*'s, which run under -race.
		t.Skip("the demo needs the CPU the race detector takes")
	}
	spawn := spawnSelf
	t.Cleanup(func() { spawnSelf = spawn })
	spawnSelf = func(args ...string) (*exec.Cmd, error) {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), childArgs+"="+strings.Join(args, "\x1f"))
		return c, nil
	}
	code, out, errOut := runCLI(t, "", "demo", "archive")
	if code != 0 || !strings.Contains(out, "nothing lost:") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, name := range []string{"lossy", "stalled", "late"} {
		m := regexp.MustCompile(`(?m)^` + name + ` .* (\d+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no row for %s:\n%s", name, out)
		}
		if n, _ := strconv.Atoi(m[1]); n == 0 {
			t.Errorf("%s took nothing from the archive:\n%s", name, out)
		}
	}
	t.Log("\n" + out)
}

// TestDemoArchiveExpectsWhatWasSent: the demo judges the subscribers by
// what the publishers sent, not by what the archive under test holds:
// an archive short of the first session's tail, and subscribers that
// delivered only what it holds, is a loss it reports. (It took the
// expected length from the archive, and such a run said nothing lost.)
func TestDemoArchiveExpectsWhatWasSent(t *testing.T) {
	s1 := transport.StreamID{Feed: 1, Session: 100}
	s2 := transport.StreamID{Feed: 1, Session: 200}
	sub := &archiveDemoSub{name: "late", order: []transport.StreamID{s1, s2}, tallies: map[transport.StreamID]*tally{}}
	for _, s := range []struct {
		id transport.StreamID
		n  uint64
	}{{s1, 90}, {s2, 50}} {
		tl := newTally()
		start := transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: s.id, FirstSeq: 1}}
		tl.add(&start, time.Now())
		for seq := uint64(1); seq <= s.n; seq++ {
			ev := transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: s.id, Seq: seq}}
			tl.add(&ev, time.Now())
		}
		sub.tallies[s.id] = &tl
	}
	r := &archiveDemoResult{sessions: [2]transport.StreamID{s1, s2}, sent: [2]uint64{100, 50}, archived: [2]uint64{90, 50}, subs: []*archiveDemoSub{sub}}
	ps := strings.Join(r.problems(), "; ")
	for _, want := range []string{"late: session 1: 90 of 100 delivered", "the archive holds session 1 up to 90, its publisher sent 100"} {
		if !strings.Contains(ps, want) {
			t.Errorf("problems %q: want %q", ps, want)
		}
	}
	r.sent[0], r.archived[0] = 90, 90
	if ps := r.problems(); len(ps) != 0 {
		t.Errorf("problems %q of a run that lost nothing", ps)
	}
}
