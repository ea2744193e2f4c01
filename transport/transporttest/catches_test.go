package transporttest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/transport/transporttest"
)

// bugEnv names the fake bug TestBrokenFake runs the suite against.
const bugEnv = "TRANSPORTTEST_FAKE_BUG"

// TestSuiteCatches runs the suite against deliberately broken fakes, in
// a child process (a failing Run fails its test), and checks that the
// subtest meant to catch each bug fails, saying why.
func TestSuiteCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	for _, c := range []struct {
		bug     fakeBug
		subtest string
		says    string
	}{
		{bugSilentLoss, "Ordering", "seq 100..100 neither delivered nor reported"},
		{bugDuplicate, "Ordering", "message 49 delivered again"},
		{bugNoReplaces, "Restart", "in Replaces, not 7/"},
		{bugIgnoreCtx, "ContextCancel", "Receive with a cancelled context returned still blocked"},
		{bugLeak, "NoGoroutineLeak", "goroutines left running"},
		{bugLogNewStream, "Restart", "came from stream transporttest/1, not transporttest/0: a log's partition is one stream"},
		{bugLoseOnRestart, "Durable", "replayed: event 0: message 2000 delivered before message 0"},
		{bugNoRestartServer, "Durable", "claim durable, but the harness has no RestartServer"},
		{bugReplaySkips, "Replay", "replayed: event 0: message 667 delivered before message 666"},
		{bugReplayRenumbers, "Replay", "positions: event 0: message 666 at transporttest/0 seq 0, first delivered at transporttest/0 seq 666"},
		{bugNoNewSubscriber, "Replay", "claim replay, but the harness has no NewSubscriber"},
		{bugNoNewSubscriber, "Durable", "claim durable, but the harness has no NewSubscriber"},
		{bugCommitReceived, "AtLeastOnce", "redelivered: messages 1000-1999 of 1000..1999 unacknowledged, never delivered again"},
		{bugForgetAcks, "AtLeastOnce", "redelivered: event 0: message 0 delivered again, but messages 0..999 were acknowledged"},
		{bugAckRegress, "AtLeastOnce", "redelivered: event 0: message 500 delivered again, but messages 0..999 were acknowledged"},
		{bugNoGroupMember, "AtLeastOnce", "claim at-least-once, but the harness has no NewGroupMember"},
		{bugAckMissing, "Semantics", "claims ordered|gap-reports|deduplicated|durable|replay|at-least-once but does not implement transport.Acknowledger"},
		{bugAckMissing, "AtLeastOnce", "claim at-least-once, but the subscriber does not implement transport.Acknowledger"},
		{bugAckUnclaimed, "Semantics", "implements transport.Acknowledger but claims ordered|gap-reports|deduplicated|durable|replay, without at-least-once"},
	} {
		t.Run(c.subtest+"/"+string(c.bug), func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestBrokenFake$/^"+c.subtest+"$", "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), bugEnv+"="+string(c.bug))
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a fake with bug %s:\n%s", c.bug, out)
			}
			for _, want := range []string{"--- FAIL: TestBrokenFake/" + c.subtest, c.says} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestBrokenFake is run by TestSuiteCatches, in a child process: the
// fake log for its bugs, the fake multicast-like transport for the
// others.
func TestBrokenFake(t *testing.T) {
	bug := fakeBug(os.Getenv(bugEnv))
	if bug == "" {
		t.Skip("run by TestSuiteCatches")
	}
	if o, ok := brokenLog(bug); ok {
		transporttest.Run(t, o.harness())
		return
	}
	transporttest.Run(t, fakeOptions{sem: reliable, faults: true, bug: bug}.harness())
}
