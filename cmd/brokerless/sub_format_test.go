package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

func TestAppendLine(t *testing.T) {
	tests := []struct {
		name    string
		seq     uint64
		topic   string
		payload string
		want    string
	}{
		{"text", 7, "AAPL", "AAPL bid=189.21 ask=189.23", "7 AAPL AAPL bid=189.21 ask=189.23\n"},
		{"no topic", 1, "", "hello", "1 - hello\n"},
		{"empty payload", 2, "t", "", "2 t \n"},
		{"unicode", 3, "", "prix 12€ ✓", "3 - prix 12€ ✓\n"},
		{"binary", 4, "b", "\x00\x01\xff", "4 b 0001ff\n"},
		{"invalid utf-8", 5, "", "caf\xe9", "5 - 636166e9\n"},
		{"tab", 6, "", "a\tb", "6 - 610962\n"},
		{"newline", 7, "", "a\n", "7 - 610a\n"},
	}
	for _, tt := range tests {
		m := transport.Message{Seq: tt.seq, Topic: tt.topic, Payload: []byte(tt.payload)}
		if got := string(appendLine(nil, &m)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDescribeEvents(t *testing.T) {
	id := transport.StreamID{Feed: 1, Session: 0xabc}
	old := transport.StreamID{Feed: 1, Session: 0x123}
	tests := []struct {
		ev   transport.Event
		want string
	}{
		{transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: id, From: 100, To: 120, Reason: transport.GapTimeout}},
			"gap 1/0000000000000abc seq 100..120 (21 lost): recovery timed out"},
		{transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: id, FirstSeq: 1}},
			"stream start 1/0000000000000abc at seq 1"},
		{transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: id, Replaces: old, FirstSeq: 1}},
			"stream start 1/0000000000000abc at seq 1, replaces 1/0000000000000123 (publisher restarted)"},
		{transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{Stream: id, LastSeq: 5000, Reason: transport.EndClosed}},
			"stream end 1/0000000000000abc after seq 5000: closed by publisher"},
	}
	for _, tt := range tests {
		if got := describe(&tt.ev); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

func TestStatsLine(t *testing.T) {
	s := statsSample{
		at:        time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC),
		interval:  2 * time.Second,
		delivered: 150000,
		fresh:     100000,
		mcast: &multicast.SubscriberStats{ReceiverStats: reliable.ReceiverStats{
			Recovered: 120, Duplicates: 3, NacksSent: 40, Suppressed: 2, Gaps: 1, GapSeqs: 21,
		}},
		p50: 35123 * time.Nanosecond,
		p99: 812345 * time.Nanosecond,
	}
	want := "15:04:05 delivered/s=50000 delivered=150000 recovered=120 duplicates=3 nacks=40 suppressed=2 gaps=1 lost=21 p50=35.1µs p99=812µs\n"
	if got := statsLine(s); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Any other transport's subscriber: the gaps the sink counted.
	s.mcast, s.gaps, s.lost = nil, 2, 30
	want = "15:04:05 delivered/s=50000 delivered=150000 gaps=2 lost=30 p50=35.1µs p99=812µs\n"
	if got := statsLine(s); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 999: "999ns", 1234: "1.23µs", 1234567: "1.23ms", 45678901234: "45.7s",
	} {
		if got := short(d).String(); got != want {
			t.Errorf("short(%d) = %s, want %s", int64(d), got, want)
		}
	}
}

// TestRecoveredMeansTheSameEverywhere: the README and mcast sub --help
// define the recovered counter as the engine counts it (frames, that is
// messages, or fragments of messages larger than a datagram).
func TestRecoveredMeansTheSameEverywhere(t *testing.T) {
	const meaning = "messages that arrived after their loss was noticed, by repair or late (a message split over several datagrams counts once per fragment)"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "mcast", "sub", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for name, text := range map[string]string{"README.md": string(readme), "mcast sub --help": out} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), meaning) {
			t.Errorf("%s does not define recovered as %q", name, meaning)
		}
	}
}
