package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDemoWebhook: with no flags, the demo delivers every event to both
// endpoints, the flaky one after two failed attempts of each, prints
// the table and exits 0.
func TestDemoWebhook(t *testing.T) {
	code, out, errOut := runCLI(t, "", "demo", "webhook")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	rows := map[string][]int{}
	for _, m := range regexp.MustCompile(`(?m)^ *ep_\w+ +(healthy|flaky) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$`).FindAllStringSubmatch(out, -1) {
		var n []int
		for _, f := range m[2:] {
			v, _ := strconv.Atoi(f)
			n = append(n, v)
		}
		rows[m[1]] = n
	}
	// events, attempts, delivered, retried, pending, failed, accepted
	want := map[string][]int{"healthy": {20, 20, 20, 0, 0, 0, 20}, "flaky": {20, 60, 20, 20, 0, 0, 20}}
	for name, w := range want {
		if got := rows[name]; !slicesEqual(got, w) {
			t.Errorf("%s row %v, want %v\n%s", name, got, w, out)
		}
	}
	if !strings.Contains(out, "OK: all 20 events delivered to both endpoints") {
		t.Errorf("no OK line:\n%s", out)
	}
	t.Logf("\n%s", out)
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDemoWebhookReportsFailure: a receiver failing more attempts than
// the schedule makes leaves every delivery failed, and the demo says so.
func TestDemoWebhookReportsFailure(t *testing.T) {
	var out bytes.Buffer
	res, err := runDemoWebhook(context.Background(), demoWebhookOptions{events: 3, failFirst: len(demoWebhookSchedule), timeout: time.Minute}, &out)
	if err != nil {
		t.Fatalf("runDemoWebhook: %v\n%s", err, &out)
	}
	p := res.problems()
	if len(p) != 1 || !strings.Contains(p[0], "flaky: 0 of 3 events delivered (0 pending, 3 failed)") || !strings.Contains(out.String(), "FAIL") {
		t.Errorf("problems %q\n%s", p, &out)
	}
}

func TestDemoWebhookBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--events", "0"}, {"--fail-first", "4"}, {"--fail-first", "-1"}, {"--timeout", "0s"}} {
		code, out, errOut := runCLI(t, "", append([]string{"demo", "webhook"}, args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, args[0]+" "+args[1]) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming the flag and nothing started", args, code, out, errOut)
		}
	}
	code, out, _ := runCLI(t, "", "demo", "webhook", "--help")
	if code != exitOK || !strings.Contains(out, "brokerless demo webhook --events 200 --fail-first 3") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}

// TestDemoWebhookReportNoRetries: with --fail-first 0 nothing is retried,
// and the report does not say the flaky receiver delivered after retries,
// nor that it answers 503 to "the first 0 attempts".
func TestDemoWebhookReportNoRetries(t *testing.T) {
	ok := func(retried int) string {
		var b bytes.Buffer
		writeDemoWebhookReport(&b, &demoWebhookResult{sent: 2, endpoints: []demoEndpointResult{
			{name: "healthy", events: 2, attempts: 2, delivered: 2, accepted: 2},
			{name: "flaky", events: 2, attempts: 2 + retried, delivered: 2, retried: retried, accepted: 2},
		}})
		return b.String()
	}
	if out := ok(0); !strings.Contains(out, "OK: all 2 events delivered to both endpoints in 0s, signed, none retried.") {
		t.Errorf("no retries:\n%s", out)
	}
	if out := ok(2); !strings.Contains(out, "signed, the flaky one after its retries.") {
		t.Errorf("retries:\n%s", out)
	}
	for n, want := range map[int]string{
		0: "--fail-first 0: accepts every delivery",
		1: "answers 503 to the first attempt of each event",
		2: "answers 503 to the first 2 attempts of each event",
	} {
		if got := flakyReceiverDoes(n); got != want {
			t.Errorf("flakyReceiverDoes(%d) = %q, want %q", n, got, want)
		}
	}
}
