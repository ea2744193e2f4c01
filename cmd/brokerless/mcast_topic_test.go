package main

import (
	"strings"
	"testing"

	"github.com/brokerless/brokerless/reliable"
)

// TestMcastTopicTooLong: a --topic no multicast message can carry is
// refused when the command starts, one line, exit 2 — not at the first
// message, exit 1.
func TestMcastTopicTooLong(t *testing.T) {
	long := strings.Repeat("t", reliable.MaxTopicLen+1)
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
