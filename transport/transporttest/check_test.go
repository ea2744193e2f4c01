package transporttest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// checkCase is a log and the violation a checker must find in it: the
// offending event (-1: something missing) and a piece of its reason, or
// ok.
type checkCase struct {
	name   string
	events []transport.Event
	ok     bool
	event  int
	reason string
}

func runChecks(t *testing.T, check func([]transport.Event) error, cases []checkCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := check(c.events)
			if c.ok {
				if err != nil {
					t.Fatalf("good log rejected: %v", err)
				}
				return
			}
			var v *transporttest.Violation
			if !errors.As(err, &v) {
				t.Fatalf("got %v, want a *Violation", err)
			}
			if v.Event != c.event || !strings.Contains(v.Reason, c.reason) {
				t.Fatalf("got violation at event %d: %q; want event %d, reason containing %q", v.Event, v.Reason, c.event, c.reason)
			}
		})
	}
}

func TestCheckOrdered(t *testing.T) {
	runChecks(t, transporttest.CheckOrdered, []checkCase{
		{name: "empty", ok: true},
		{name: "increasing", ok: true, events: evlog(start(s1, s3, 1), msg(s1, 1, 0), gap(s1, 2, 3), msg(s1, 4, 3), msg(s1, 9, 4))},
		{name: "streams independent", ok: true, events: evlog(msg(s1, 5, 0), msg(s2, 1, 1), msg(s1, 6, 2), msg(s2, 2, 3))},
		{name: "repeated seq", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), msg(s1, 2, 2)), event: 2, reason: "seq 2 delivered after seq 2"},
		{name: "decreasing", events: evlog(msg(s1, 5, 0), msg(s2, 9, 1), msg(s1, 4, 2)), event: 2, reason: "seq 4 delivered after seq 5"},
	})
}

func TestCheckAccounting(t *testing.T) {
	zero := transport.StreamID{Feed: 1}
	restart := evlog(start(s1, zero, 1), msg(s1, 1, 0), msg(s1, 2, 1), end(s1, 2), start(s2, s1, 1), msg(s2, 1, 2))
	both := []checkCase{
		{name: "empty", ok: true},
		{name: "messages and gaps", ok: true, events: evlog(start(s1, zero, 1), msg(s1, 1, 0), gap(s1, 2, 3), msg(s1, 4, 3), end(s1, 4))},
		{name: "no stream-start", ok: true, events: evlog(msg(s1, 7, 0), msg(s1, 8, 1))},
		{name: "restart", ok: true, events: restart},
		{name: "replaced stream's gap after replacement", ok: true, events: evlog(msg(s1, 1, 0), start(s2, s1, 1), gap(s1, 2, 2), end(s1, 2), msg(s2, 1, 1))},
		{name: "interleaved streams", ok: true, events: evlog(msg(s1, 1, 0), msg(s3, 1, 1), gap(s1, 2, 2), msg(s3, 2, 2))},
		{name: "repeated seq", events: evlog(msg(s1, 1, 0), msg(s1, 1, 1)), event: 1, reason: "already delivered or reported"},
		{name: "gap over delivered", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), gap(s1, 2, 4)), event: 2, reason: "already delivered or reported"},
		{name: "decreasing", events: evlog(msg(s1, 5, 0), msg(s1, 3, 1)), event: 1, reason: "already delivered"},
		{name: "gap backwards", events: evlog(gap(s1, 4, 3)), event: 0, reason: "From 4 > To 3"},
		{name: "gap without reason", events: evlog(transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s1, From: 1, To: 1}}), event: 0, reason: "unknown reason"},
		{name: "gap of unknown reason", events: evlog(transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s1, From: 1, To: 1, Reason: 200}}), event: 0, reason: "unknown reason 200"},
		{name: "zero session", events: evlog(msg(s1, 1, 0), msg(zero, 2, 1)), event: 1, reason: "zero session"},
		{name: "zero session start", events: evlog(start(zero, zero, 1)), event: 0, reason: "zero session"},
		{name: "zero session end", events: evlog(end(zero, 1)), event: 0, reason: "zero session"},
		{name: "log streams", ok: true, events: evlog(start(l1, none, 0), msg(l1, 0, 0), gap(l1, 1, 2), msg(l2, 5, 1), msg(l1, 3, 2), end(l1, 3))},
		{name: "log stream started again", ok: true, events: evlog(start(l1, none, 0), msg(l1, 0, 0), gap(l1, 1, 2), start(l1, none, 7), msg(l1, 7, 1), msg(l1, 8, 2))},
		{name: "log stream started again at once", ok: true, events: evlog(start(l1, none, 3), start(l1, none, 3), msg(l1, 3, 0))},
		{name: "log stream started again below delivered", events: evlog(start(l1, none, 0), msg(l1, 0, 0), msg(l1, 1, 1), start(l1, none, 1)), event: 3, reason: "seq 1 was already delivered"},
		{name: "log stream started again replaces", events: evlog(start(l1, none, 0), msg(l1, 0, 0), start(l1, s1, 5)), event: 2, reason: "one stream for its whole life"},
		{name: "log stream started after end", events: evlog(start(l1, none, 0), msg(l1, 0, 0), end(l1, 0), start(l1, none, 5)), event: 3, reason: "second stream-start"},
		{name: "log stream replaces", events: evlog(start(l1, s1, 0)), event: 0, reason: "one stream for its whole life"},
		{name: "replaces a log stream", events: evlog(start(s1, l1, 1)), event: 0, reason: "replaces t/0, a log's stream"},
		{name: "topic and session", events: evlog(msg(transport.StreamID{Topic: "t", Session: 5}, 1, 0)), event: 0, reason: "names both"},
		{name: "topic and feed", events: evlog(end(transport.StreamID{Topic: "t", Feed: 5}, 1)), event: 0, reason: "names both"},
		{name: "partition without topic", events: evlog(gap(transport.StreamID{Partition: 2, Session: 1}, 1, 1)), event: 0, reason: "partition 2 without a topic"},
		{name: "unknown kind", events: evlog(msg(s1, 1, 0), transport.Event{Kind: 9}), event: 1, reason: "unknown event kind"},
		{name: "start after data", events: evlog(msg(s1, 1, 0), start(s1, zero, 1)), event: 1, reason: "after messages or gaps"},
		{name: "second start", events: evlog(start(s1, zero, 1), start(s1, zero, 1)), event: 1, reason: "second stream-start"},
		{name: "start after end", events: evlog(end(s1, 0), start(s1, zero, 1)), event: 1, reason: "after its stream-end"},
		{name: "before FirstSeq", events: evlog(start(s1, zero, 5), msg(s1, 4, 0)), event: 1, reason: "FirstSeq 5"},
		{name: "replaces itself", events: evlog(start(s1, s1, 1)), event: 0, reason: "replaces itself"},
		{name: "replaces another feed", events: evlog(start(s3, s1, 1)), event: 0, reason: "another feed"},
		{name: "message of replaced stream", events: evlog(msg(s1, 1, 0), start(s2, s1, 1), msg(s1, 2, 1)), event: 2, reason: "replaced it"},
		{name: "message after end", events: evlog(msg(s1, 1, 0), end(s1, 1), msg(s1, 2, 1)), event: 2, reason: "after its stream-end"},
		{name: "gap after end", events: evlog(msg(s1, 1, 0), end(s1, 1), gap(s1, 2, 2)), event: 2, reason: "after its stream-end"},
		{name: "second end", events: evlog(end(s1, 0), end(s1, 0)), event: 1, reason: "second stream-end"},
		{name: "end before delivered", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), end(s1, 1)), event: 2, reason: "LastSeq 1, but seq 2"},
		{name: "open gap", ok: true, events: evlog(start(s1, zero, 1), msg(s1, 1, 0), openGap(s1, 2), end(s1, 1), start(s2, s1, 1), msg(s2, 1, 1))},
		{name: "open gap, no end yet", ok: true, events: evlog(msg(s1, 1, 0), openGap(s1, 2))},
		{name: "open gap's end elsewhere", events: evlog(msg(s1, 1, 0), openGap(s1, 2), end(s1, 2)), event: 2, reason: "after an open gap from 2, want 1"},
		{name: "after open gap", events: evlog(msg(s1, 1, 0), openGap(s1, 2), msg(s1, 3, 1)), event: 2, reason: "after its open gap from 2"},
		{name: "open gap with a range", events: evlog(msg(s1, 1, 0), transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s1, From: 2, To: 4, Reason: transport.GapNotArchived, Open: true}}), event: 1, reason: "unknown size has To = From"},
		{name: "start unknown", ok: true, events: evlog(start(s1, zero, 9), startUnknown(s1, 9, 9), msg(s1, 10, 0))},
		{name: "start unknown with a range", events: evlog(start(s1, zero, 8), startUnknown(s1, 8, 9), msg(s1, 10, 0)), event: 1, reason: "unknown size has To = From"},
	}
	t.Run("contiguous", func(t *testing.T) {
		runChecks(t, func(evs []transport.Event) error { return transporttest.CheckAccounting(evs, true) }, append(both,
			checkCase{name: "hole", events: evlog(msg(s1, 1, 0), msg(s1, 3, 1)), event: 1, reason: "seq 2..2 neither delivered nor reported"},
			checkCase{name: "hole before gap", events: evlog(msg(s1, 1, 0), gap(s1, 3, 4)), event: 1, reason: "seq 2..2"},
			checkCase{name: "not at FirstSeq", events: evlog(start(s1, zero, 1), msg(s1, 2, 0)), event: 1, reason: "FirstSeq 1"},
			checkCase{name: "not at second FirstSeq", events: evlog(start(l1, none, 0), msg(l1, 0, 0), start(l1, none, 5), msg(l1, 6, 1)), event: 3, reason: "second stream-start said FirstSeq 5"},
			checkCase{name: "silent tail", events: evlog(msg(s1, 1, 0), end(s1, 3)), event: 1, reason: "seq 2..3 neither delivered nor reported"},
		))
	})
	t.Run("sparse", func(t *testing.T) {
		runChecks(t, func(evs []transport.Event) error { return transporttest.CheckAccounting(evs, false) }, append(both,
			checkCase{name: "hole", ok: true, events: evlog(msg(s1, 1, 0), msg(s1, 3, 1))},
			checkCase{name: "after FirstSeq", ok: true, events: evlog(start(s1, zero, 1), msg(s1, 2, 0))},
			checkCase{name: "before second FirstSeq", events: evlog(start(l1, none, 0), msg(l1, 0, 0), start(l1, none, 5), msg(l1, 4, 1)), event: 3, reason: "before FirstSeq 5 of its second"},
			checkCase{name: "after second FirstSeq", ok: true, events: evlog(start(l1, none, 0), msg(l1, 0, 0), start(l1, none, 5), msg(l1, 6, 1))},
			checkCase{name: "end after last", ok: true, events: evlog(msg(s1, 1, 0), end(s1, 3))},
		))
	})
}

func TestCheckExactlyOnce(t *testing.T) {
	runChecks(t, func(evs []transport.Event) error { return transporttest.CheckExactlyOnce(evs, 3) }, []checkCase{
		{name: "all once", ok: true, events: evlog(start(s1, s3, 1), msg(s1, 1, 0), msg(s1, 2, 1), msg(s1, 3, 2), end(s1, 3))},
		{name: "any order", ok: true, events: evlog(msg(s1, 1, 2), msg(s1, 2, 0), msg(s1, 3, 1))},
		{name: "missing", events: evlog(msg(s1, 1, 1)), event: -1, reason: "2 of 3 messages never delivered: 0, 2"},
		{name: "twice", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), msg(s1, 3, 1), msg(s1, 4, 2)), event: 2, reason: "message 1 delivered again (first at event 1)"},
		{name: "gap", events: evlog(msg(s1, 1, 0), gap(s1, 2, 2), msg(s1, 3, 1), msg(s1, 4, 2)), event: 1, reason: "nothing may be lost"},
		{name: "compacted gap", ok: true, events: evlog(msg(l1, 0, 0), compacted(l1, 1, 4), msg(l1, 5, 1), msg(l1, 6, 2))},
		{name: "compacted gap over a message", events: evlog(msg(l1, 0, 0), compacted(l1, 1, 1), msg(l1, 2, 2)), event: -1, reason: "1 of 3 messages never delivered: 1"},
		{name: "beyond n", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), msg(s1, 3, 2), msg(s1, 4, 3)), event: 3, reason: "message 3 delivered, only 3 published"},
		{name: "bad payload", events: evlog(msg(s1, 1, 0), transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: s1, Seq: 2, Payload: []byte("hello")}}), event: 1, reason: "bad payload"},
	})
	t.Run("ranges", func(t *testing.T) {
		err := transporttest.CheckExactlyOnce(evlog(msg(s1, 1, 4), msg(s1, 2, 8)), 12)
		if err == nil || !strings.Contains(err.Error(), "10 of 12 messages never delivered: 0-3, 5-7, 9-11") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCheckDelivered(t *testing.T) {
	runChecks(t, func(evs []transport.Event) error { return transporttest.CheckDelivered(evs, 2) }, []checkCase{
		{name: "all", ok: true, events: evlog(msg(s1, 1, 0), msg(s1, 2, 1))},
		{name: "twice", ok: true, events: evlog(msg(s1, 1, 0), msg(s1, 2, 0), msg(s1, 3, 1))},
		{name: "missing", events: evlog(msg(s1, 1, 1)), event: -1, reason: "1 of 2 messages never delivered: 0"},
		{name: "gap", events: evlog(msg(s1, 1, 0), gap(s1, 2, 2), msg(s1, 3, 1)), event: 1, reason: "nothing may be lost"},
		{name: "compacted gap", ok: true, events: evlog(msg(l1, 0, 0), compacted(l1, 1, 1), msg(l1, 2, 1))},
	})
}

func TestCheckAtMostOnce(t *testing.T) {
	runChecks(t, transporttest.CheckAtMostOnce, []checkCase{
		{name: "empty", ok: true},
		{name: "lossy", ok: true, events: evlog(msg(s1, 1, 0), gap(s1, 2, 4), msg(s1, 5, 4))},
		{name: "twice", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), msg(s2, 1, 0)), event: 2, reason: "message 0 delivered again"},
		{name: "bad payload", events: evlog(transport.Event{Kind: transport.EventMessage}), event: 0, reason: "bad payload"},
	})
}

func TestCheckLossReported(t *testing.T) {
	runChecks(t, func(evs []transport.Event) error { return transporttest.CheckLossReported(evs, 5) }, []checkCase{
		{name: "all delivered", ok: true, events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), msg(s1, 3, 2), msg(s1, 4, 3), msg(s1, 5, 4))},
		{name: "holes reported", ok: true, events: evlog(gap(s1, 1, 1), msg(s1, 2, 1), gap(s1, 3, 4), msg(s1, 5, 4))},
		{name: "tail reported", ok: true, events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), gap(s1, 3, 5))},
		{name: "fragmented seqs", ok: true, events: evlog(msg(s1, 1, 0), msg(s1, 4, 1), gap(s1, 5, 7), msg(s1, 9, 4))},
		{name: "one gap for several", ok: true, events: evlog(msg(s1, 10, 0), gap(s1, 11, 11), msg(s1, 14, 4))},
		{name: "nothing delivered, gap", ok: true, events: evlog(gap(s1, 1, 5))},
		{name: "nothing delivered, compacted", events: evlog(compacted(l1, 0, 4)), event: -1, reason: "none of 5 messages delivered and no gap"},
		{name: "compacted is not a loss report", events: evlog(msg(s1, 1, 0), compacted(s1, 2, 2), msg(s1, 3, 2), msg(s1, 4, 3), msg(s1, 5, 4)), event: 2, reason: "message 1 lost silently"},
		{name: "compacted beside a lost gap", ok: true, events: evlog(msg(s1, 1, 0), compacted(s1, 2, 2), gap(s1, 3, 3), msg(s1, 4, 3), msg(s1, 5, 4))},
		{name: "nothing delivered", events: evlog(start(s1, s3, 1)), event: -1, reason: "none of 5 messages delivered and no gap"},
		{name: "silent hole", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), msg(s1, 4, 3), msg(s1, 5, 4)), event: 2, reason: "message 2 lost silently: no gap between seq 2 and 4"},
		{name: "gap elsewhere", events: evlog(msg(s1, 1, 0), gap(s1, 2, 2), msg(s1, 3, 1), msg(s1, 6, 4)), event: 3, reason: "messages 2-3 lost silently"},
		{name: "gap of another stream", events: evlog(msg(s1, 1, 0), gap(s2, 2, 4), msg(s1, 5, 4)), event: 2, reason: "messages 1-3 lost silently"},
		{name: "silent head", events: evlog(msg(s1, 3, 2), msg(s1, 4, 3), msg(s1, 5, 4)), event: 0, reason: "messages 0-1 lost silently: no gap before seq 3"},
		{name: "silent tail", events: evlog(msg(s1, 1, 0), msg(s1, 2, 1), msg(s1, 3, 2)), event: -1, reason: "messages 3-4 lost silently: no gap after seq 3"},
		{name: "two streams", events: evlog(msg(s1, 1, 0), msg(s2, 1, 1)), event: 1, reason: "needs one stream"},
		{name: "seq against index order", events: evlog(msg(s1, 2, 0), msg(s1, 1, 1), gap(s1, 3, 5)), event: 1, reason: "message 1 has seq 1, not above seq 2"},
		{name: "bad payload", events: evlog(transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: s1, Payload: make([]byte, 12)}}), event: 0, reason: "bad payload"},
	})
}

func TestCheckReplayed(t *testing.T) {
	cases := []checkCase{
		{name: "all in order", ok: true, events: evlog(msg(l1, 5, 2), msg(l1, 6, 3), msg(l1, 7, 4))},
		{name: "compacted gap", ok: true, events: evlog(msg(l1, 5, 2), compacted(l1, 6, 6), msg(l1, 7, 3), msg(l1, 8, 4))},
		{name: "from too early", events: evlog(msg(l1, 4, 1), msg(l1, 5, 2)), event: 0, reason: "message 1 delivered, but the log read back holds messages 2..4"},
		{name: "beyond n", events: evlog(msg(l1, 5, 2), msg(l1, 6, 3), msg(l1, 7, 4), msg(l1, 8, 5)), event: 3, reason: "message 5 delivered"},
		{name: "first skipped", events: evlog(msg(l1, 6, 3), msg(l1, 7, 4)), event: 0, reason: "message 3 delivered before message 2"},
		{name: "hole", events: evlog(msg(l1, 5, 2), msg(l1, 7, 4)), event: 1, reason: "message 4 delivered before message 3"},
		{name: "out of order", events: evlog(msg(l1, 5, 2), msg(l1, 7, 4), msg(l1, 6, 3)), event: 1, reason: "message 4 delivered before message 3"},
		{name: "tail missing", events: evlog(msg(l1, 5, 2)), event: -1, reason: "messages 3-4 of 2..4 never read back"},
		{name: "last missing", events: evlog(msg(l1, 5, 2), msg(l1, 6, 3)), event: -1, reason: "message 4 of 2..4 never read back"},
		{name: "nothing", event: -1, reason: "messages 2-4 of 2..4 never read back"},
		{name: "lost gap", events: evlog(msg(l1, 5, 2), gap(l1, 6, 6), msg(l1, 7, 3), msg(l1, 8, 4)), event: 1, reason: "nothing stored may be lost"},
		{name: "bad payload", events: evlog(transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: l1, Payload: []byte("x")}}), event: 0, reason: "bad payload"},
	}
	check := func(once bool) func([]transport.Event) error {
		return func(evs []transport.Event) error { return transporttest.CheckReplayed(evs, 2, 5, once) }
	}
	again := evlog(msg(l1, 5, 2), msg(l1, 6, 3), msg(l1, 5, 2), msg(l1, 6, 3), msg(l1, 7, 4))
	t.Run("once", func(t *testing.T) {
		runChecks(t, check(true), append(cases,
			checkCase{name: "again", events: again, event: 2, reason: "message 2 delivered again (first at event 0)"}))
	})
	t.Run("at least once", func(t *testing.T) {
		runChecks(t, check(false), append(cases,
			checkCase{name: "again", ok: true, events: again},
			checkCase{name: "ahead after a repeat", events: evlog(msg(l1, 5, 2), msg(l1, 5, 2), msg(l1, 7, 4)), event: 2, reason: "message 4 delivered before message 3"}))
	})
}

func TestCheckPositions(t *testing.T) {
	at := map[int]transport.Receipt{0: {Stream: l1, Seq: 10}, 1: {Stream: l1, Seq: 11}}
	runChecks(t, func(evs []transport.Event) error { return transporttest.CheckPositions(evs, at) }, []checkCase{
		{name: "empty", ok: true},
		{name: "same places", ok: true, events: evlog(msg(l1, 10, 0), gap(l1, 9, 9), msg(l1, 11, 1), msg(l1, 12, 2))},
		{name: "another seq", events: evlog(msg(l1, 10, 0), msg(l1, 1, 1)), event: 1, reason: "message 1 at t/0 seq 1, first delivered at t/0 seq 11"},
		{name: "another stream", events: evlog(msg(l2, 10, 0)), event: 0, reason: "message 0 at t/1 seq 10, first delivered at t/0 seq 10"},
		{name: "bad payload", events: evlog(transport.Event{Kind: transport.EventMessage}), event: 0, reason: "bad payload"},
	})
}

func TestCheckRedelivered(t *testing.T) {
	check := func(once bool) func([]transport.Event) error {
		return func(evs []transport.Event) error { return transporttest.CheckRedelivered(evs, 2, 4, once) }
	}
	both := []checkCase{
		{name: "the unacknowledged", ok: true, events: evlog(msg(l1, 2, 2), msg(l1, 3, 3))},
		{name: "an acknowledged one", events: evlog(msg(l1, 1, 1), msg(l1, 2, 2), msg(l1, 3, 3)), event: 0, reason: "message 1 delivered again, but messages 0..1 were acknowledged"},
		{name: "none", event: -1, reason: "messages 2-3 of 2..3 unacknowledged, never delivered again"},
		{name: "last missing", events: evlog(msg(l1, 2, 2)), event: -1, reason: "message 3 of 2..3 unacknowledged"},
		{name: "beyond n", events: evlog(msg(l1, 2, 2), msg(l1, 3, 3), msg(l1, 4, 4)), event: 2, reason: "message 4 delivered, only 4 published"},
		{name: "lost gap", events: evlog(gap(l1, 2, 2), msg(l1, 3, 3)), event: 0, reason: "nothing stored may be lost"},
	}
	twice := evlog(msg(l1, 2, 2), msg(l1, 2, 2), msg(l1, 3, 3))
	t.Run("once", func(t *testing.T) {
		runChecks(t, check(true), append(both, checkCase{name: "twice", events: twice, event: 1, reason: "message 2 delivered again"}))
	})
	t.Run("at least once", func(t *testing.T) {
		runChecks(t, check(false), append(both, checkCase{name: "twice", ok: true, events: twice}))
	})
}

// openGap is an open gap of s from from (transport.Gap.Open).
func openGap(s transport.StreamID, from uint64) transport.Event {
	return transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s, From: from, To: from, Reason: transport.GapNotArchived, Open: true}}
}

// startUnknown is a gap whose start is unknown (transport.GapStartUnknown).
func startUnknown(s transport.StreamID, from, to uint64) transport.Event {
	return transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: s, From: from, To: to, Reason: transport.GapStartUnknown}}
}
