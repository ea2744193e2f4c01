package main

import (
	"strings"
	"testing"
)

// TestArchiveBadFlags: a join that needs an archive without one, a bad
// join, an archive or a recorder's destination that is not a log, and a
// recorder without --to: one line saying why, exit status 2, nothing on
// standard output, before anything starts.
func TestArchiveBadFlags(t *testing.T) {
	const group = "239.255.1.2:7000"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mcast", "sub", "--group", group, "--join", "seq:5"}, "--join seq:5 needs --archive"},
		{[]string{"mcast", "sub", "--group", group, "--join", "time:2025-01-02T15:04:05Z"}, "needs --archive"},
		{[]string{"mcast", "sub", "--group", group, "--join", "soon"}, `--join "soon": want live or earliest`},
		{[]string{"mcast", "sub", "--group", group, "--archive", "logd://127.0.0.1:9092/t", "--join", "seq:0"}, `--join "seq:0": want live, earliest, seq:N or time:T`},
		{[]string{"mcast", "sub", "--group", group, "--archive", "mcast://239.1.2.3:7000"}, "--archive mcast://239.1.2.3:7000: not a log"},
		{[]string{"mcast", "sub", "--group", group, "--archive", "nats://x:1/y"}, `--archive: bad URL "nats://x:1/y": unknown scheme`},
		{[]string{"mcast", "sub", "--group", group, "--archive", "logd://127.0.0.1:9092/"}, `--archive: bad URL "logd://127.0.0.1:9092/"`},
		{[]string{"sub", "mcast://" + group + "?join=seq:5"}, `join="seq:5": needs archive=URL`},
		{[]string{"sub", "mcast://" + group + "?archive=mcast://239.1.2.3:7000"}, "cannot be read at positions"},
		{[]string{"mcast", "record", "--group", group}, "--to is required"},
		{[]string{"mcast", "record", "--group", group, "--to", "mcast://239.1.2.3:7000"}, "--to mcast://239.1.2.3:7000: not a log"},
		{[]string{"mcast", "record", "--group", group, "--to", "logd://127.0.0.1:9092/t", "--max-in-flight", "0"}, "--max-in-flight 0"},
		{[]string{"mcast", "record", "--to", "logd://127.0.0.1:9092/t"}, "--group is required"},
		{[]string{"statsd", "--kafka", "mcast://239.1.2.3:7000"}, "--kafka mcast://239.1.2.3:7000: not a log"},
		{[]string{"statsd", "--kafka", "logd://127.0.0.1:9092"}, `--kafka: bad URL "logd://127.0.0.1:9092"`},
	} {
		code, out, errOut := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, code, out, errOut, c.want)
		}
	}
}
