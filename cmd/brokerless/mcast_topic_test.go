package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestMcastTopicTooLong: a --topic no multicast message can carry is
// refused when the command starts, one line, exit 2 — not at the first
// message, exit 1.
func TestMcastTopicTooLong(t *testing.T) {
	long := strings.Repeat("t", mcastMaxTopic+1)
	want := "--topic: 256 bytes; a multicast message's topic is at most 255 bytes\n"
	for _, args := range [][]string{
		{"pub", "mcast://" + testGroup() + "?ttl=0", "--topic", long},
		{"mcast", "pub", "--group", testGroup(), "--ttl", "0", "--topic", long},
	} {
		code, out, errOut := runCLI(t, "hello\n", args...)
		if code != exitUsage || out != "" || !strings.HasSuffix(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and %q", args[:2], code, out, errOut, want)
		}
	}
}

// TestMcastMaxTopic: mcastMaxTopic is the limit of the multicast wire,
// which a publisher meets at its first message: reliable's Sender (the
// multicast publisher's) takes a topic that long, and refuses one byte
// more.
func TestMcastMaxTopic(t *testing.T) {
	s, err := reliable.NewSender(reliable.SenderConfig{Session: 1}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{mcastMaxTopic, mcastMaxTopic + 1} {
		_, err := s.Publish(time.Unix(0, 0), &transport.Message{Topic: strings.Repeat("t", n), Payload: []byte("x")})
		if tooLarge := errors.Is(err, reliable.ErrTooLarge); tooLarge != (n > mcastMaxTopic) || (err != nil && !tooLarge) {
			t.Errorf("a topic of %d bytes: %v", n, err)
		}
	}
}
