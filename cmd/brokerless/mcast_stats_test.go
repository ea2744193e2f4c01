package main

import (
	"strings"
	"testing"

	"github.com/brokerless/brokerless/multicast"
)

// TestMcastSummaries: the exit summaries of mcast pub and sub name the
// counters of what was refused or lost (replayed control datagrams,
// repairs before a stream's start, open gaps of the archive) and what
// flow control did when there were any, and stay quiet about them
// otherwise.
func TestMcastSummaries(t *testing.T) {
	var pub multicast.PublisherStats
	var sub multicast.SubscriberStats
	pub.StatusReceived = 7 // subscribers report whatever the publisher's flow mode
	quietPub, quietSub := pubSummary(pub), subSummary(sub)
	for _, want := range []string{"replayed", "repairs before", "unknown length", "flow control"} {
		if strings.Contains(quietPub+quietSub, want) {
			t.Errorf("nothing counted, yet the summaries say %q:\n%s%s", want, quietPub, quietSub)
		}
	}
	pub.Replayed, pub.FlowReceivers = 3, 2
	leftOnly := pub
	leftOnly.FlowReceivers, leftOnly.ReceiversLeft, leftOnly.StatusAfterLeave = 0, 1, 4
	sub.RepairsBeforeStart = 4
	sub.Archive.Replays, sub.Archive.OpenGaps, sub.Archive.LateLive = 1, 2, 5
	for _, c := range []struct{ got, want string }{
		{pubSummary(pub), "replayed control datagrams dropped 3"},
		{pubSummary(pub), "flow control: held 0 times, subscribers reporting 2, timed out 0, left 0"},
		{pubSummary(leftOnly), "left 1 (reports that came after their leave ignored 4)"},
		{subSummary(sub), "repairs before the stream's start 4"},
		{subSummary(sub), "2 session tails of unknown length lost (5 of their live messages came too late)"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("summary without %q:\n%s", c.want, c.got)
		}
	}
}

func pubSummary(s multicast.PublisherStats) string {
	var b strings.Builder
	writePubStats(&b, s)
	return b.String()
}

func subSummary(s multicast.SubscriberStats) string {
	var b strings.Builder
	writeSubStats(&b, 0, 0, 0, s)
	return b.String()
}
