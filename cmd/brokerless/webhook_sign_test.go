package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWebhookSignSpecVector(t *testing.T) {
	code, out, errOut := runCLI(t, "", "webhook", "sign", "--secret", listenTestSecret,
		"--id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "--timestamp", "1614265330", "--data", `{"test": 2432232314}`)
	want := "webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek\nwebhook-timestamp: 1614265330\nwebhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=\n"
	if code != exitOK || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant:\n%s", code, out, errOut, want)
	}
	// The same body from stdin and from a file.
	file := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(file, []byte(`{"test": 2432232314}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"@-", "@" + file} {
		code, out, _ := runCLI(t, `{"test": 2432232314}`, "webhook", "sign", "--secret", listenTestSecret,
			"--id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "--timestamp", "1614265330", "--data", data)
		if code != exitOK || out != want {
			t.Errorf("--data %s: exit %d, stdout:\n%s", data, code, out)
		}
	}
}

// TestWebhookSignPostsToListen: sign --url against webhook listen: a
// verified delivery exits 0, a failing receiver's answer exits 1.
func TestWebhookSignPostsToListen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, out, _, done := startWebhookListen(t, ctx, "--secret", listenTestSecret, "--fail-first", "1")
	for _, tc := range []struct {
		code int
		want string
	}{
		{exitFailure, "503 Service Unavailable"},
		{exitOK, "204 No Content"},
	} {
		code, stdout, stderr := runCLI(t, "", "webhook", "sign", "--secret", listenTestSecret, "--id", "msg_cli", "--data", `{"a":1}`, "--url", url+"in")
		if code != tc.code || !strings.Contains(stdout, tc.want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tc.code, tc.want)
		}
	}
	waitOutput(t, out, "204 id=msg_cli")
	cancel()
	<-done
}

func TestWebhookSignBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", "x"}, "--secret is required"},
		{[]string{"--secret", "whsec_bm9wZQ==", "--data", "x"}, "--secret (#1): webhook: bad secret"},
		{[]string{"--secret", listenTestSecret}, "--data is required"},
		{[]string{"--secret", listenTestSecret, "--data", "@/nonexistent/body.json"}, "--data @/nonexistent/body.json: no such file or directory"},
		{[]string{"--secret", listenTestSecret, "--data", "x", "--timestamp", "-1"}, "--timestamp -1: must be >= 0"},
		{[]string{"--secret", listenTestSecret, "--data", "x", "--url", "ftp://x/"}, "--url ftp://x/: must be an http:// or https:// URL"},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"webhook", "sign"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" || strings.Contains(errOut, "bm9wZQ") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
