package main

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook"
)

// ageRE matches the age of a delivery, 0s or 1s by the time it is printed.
var ageRE = regexp.MustCompile(`age=\d+s`)

const listenTestSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// startWebhookListen runs "webhook listen" with args until it prints
// where it listens, and returns that URL, its outputs and its exit
// channel.
func startWebhookListen(t *testing.T, ctx context.Context, args ...string) (url string, out, errOut *syncBuffer, done <-chan int) {
	t.Helper()
	out, errOut = newSyncBuffer(""), newSyncBuffer("listening on")
	c := make(chan int, 1)
	go func() {
		c <- run(ctx, append([]string{"webhook", "listen", "--listen", "127.0.0.1:0"}, args...), stdio{in: strings.NewReader(""), out: out, err: errOut})
	}()
	select {
	case <-errOut.seen:
	case code := <-c:
		t.Fatalf("webhook listen exited %d before listening:\n%s", code, errOut)
	case <-time.After(10 * time.Second):
		t.Fatalf("webhook listen did not start:\n%s", errOut)
	}
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("no address in:\n%s", errOut)
	}
	return m[1], out, errOut, c
}

// postSigned posts body to url signed now with secret (zero: unsigned)
// and returns the status.
func postSigned(t *testing.T, client *http.Client, url, id, body string, secret webhook.Secret) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"hooks/orders", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !secret.IsZero() {
		webhook.SetHeaders(req.Header, id, time.Now(), []byte(body), secret)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestWebhookListenVerifiesAndPrints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old, _ := webhook.NewSecret(strings.NewReader(strings.Repeat("o", 64)))
	url, out, errOut, done := startWebhookListen(t, ctx, "--secret", listenTestSecret, "--secret", old.String(), "--fail-first", "1", "--fail-status", "500")
	secret, err := webhook.ParseSecret(listenTestSecret)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := webhook.NewSecret(strings.NewReader(strings.Repeat("x", 64)))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	steps := []struct {
		id, body string
		secret   webhook.Secret
		want     int
		line     string
	}{
		{"msg_1", `{"n":1}`, secret, 500, `500 id=msg_1 age=0s 7B {"n":1}`},                   // --fail-first 1
		{"msg_1", `{"n":1}`, secret, 204, `204 id=msg_1 age=0s 7B {"n":1}`},                   // the retry is handed on
		{"msg_1", `{"n":1}`, secret, 200, `200 duplicate id=msg_1`},                           // then it is a duplicate
		{"msg_2", `{"city":"Zürich"}`, old, 204, `204 id=msg_2 age=0s 18B {"city":"Zürich"}`}, // the other secret
		{"msg_3", `{}`, other, 401, `401 refused id=msg_3 from 127.0.0.1:`},
		{"msg_4", "line1\nline2", secret, 204, `204 id=msg_4 age=0s 11B "line1\nline2"`},
		{"", `{}`, webhook.Secret{}, 400, `400 refused id= from 127.0.0.1:`},
	}
	for _, s := range steps {
		if got := postSigned(t, client, url, s.id, s.body, s.secret); got != s.want {
			t.Errorf("%s: status %d, want %d", s.id, got, s.want)
		}
	}
	waitOutput(t, out, "no matching signature", "missing webhook-id")
	for _, s := range steps {
		if !strings.Contains(ageRE.ReplaceAllString(out.String(), "age=0s"), s.line) {
			t.Errorf("stdout lacks %q:\n%s", s.line, out)
		}
	}
	if n := strings.Count(out.String(), "\n"); n != len(steps) {
		t.Errorf("%d lines for %d requests:\n%s", n, len(steps), out)
	}
	tr.CloseIdleConnections()
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if want := "3 delivered, 1 failed on purpose, 1 duplicate(s), 2 refused"; !strings.Contains(errOut.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errOut)
	}
}

// Every bad flag value exits 2 before anything listens, naming the flag,
// and never shows a secret.
func TestWebhookListenBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--secret or --public-key is required"},
		{[]string{"--secret", "whsec_c2VjcmV0LXRvby1zaG9ydA=="}, "--secret (#1): webhook: bad secret: whsec_… holds 16 bytes, want 24 to 64"},
		{[]string{"--secret", listenTestSecret, "--secret", "hunter2-hunter2"}, "--secret (#2): webhook: bad secret: want whsec_… or whsk_…"},
		{[]string{"--public-key", "whpk_AAAA"}, "--public-key whpk_AAAA: webhook: bad secret: whpk_… holds 3 bytes, want 32"},
		{[]string{"--secret", listenTestSecret, "--listen", "nonsense"}, "--listen nonsense: must be host:port"},
		{[]string{"--secret", listenTestSecret, "--listen", "127.0.0.1:99999"}, "--listen 127.0.0.1:99999: must have a port in [0, 65535]"},
		{[]string{"--secret", listenTestSecret, "--tolerance", "0s"}, "--tolerance 0s: must be > 0"},
		{[]string{"--secret", listenTestSecret, "--tolerance", "soon"}, `invalid argument "soon" for "--tolerance"`},
		{[]string{"--secret", listenTestSecret, "--max-body", "0"}, "--max-body 0: must be > 0"},
		{[]string{"--secret", listenTestSecret, "--dedup-size", "0"}, "--dedup-size 0: must be > 0"},
		{[]string{"--secret", listenTestSecret, "--status", "99"}, "--status 99: must be in [200, 599]"},
		{[]string{"--secret", listenTestSecret, "--fail-status", "600"}, "--fail-status 600: must be in [200, 599]"},
		{[]string{"--secret", listenTestSecret, "--fail-first", "-1"}, "--fail-first -1: must be >= 0"},
		{[]string{"--secret", listenTestSecret, "--print-max", "-5"}, "--print-max -5: must be >= 0"},
		{[]string{"--secret", listenTestSecret, "extra"}, `unexpected argument "extra"`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var e strings.Builder
		code := run(ctx, append([]string{"webhook", "listen", "--listen", "127.0.0.1:0"}, tc.args...), stdio{in: strings.NewReader(""), out: &e, err: &e})
		cancel()
		if code != exitUsage || !strings.Contains(e.String(), tc.want) || strings.Contains(e.String(), "listening") ||
			strings.Contains(e.String(), "hunter2") || strings.Contains(e.String(), "c2VjcmV0") {
			t.Errorf("%v: exit %d, output:\n%s\nwant exit 2 and %q", tc.args, code, e.String(), tc.want)
		}
	}
}

func TestWebhookListenBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	var e strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code := run(ctx, []string{"webhook", "listen", "--secret", listenTestSecret, "--listen", busy}, stdio{in: strings.NewReader(""), out: &e, err: &e})
	if want := "brokerless webhook listen: --listen " + busy + ": bind: address already in use"; code != exitFailure || !strings.HasPrefix(e.String(), want) {
		t.Fatalf("exit %d, output:\n%s\nwant exit 1 and %q", code, e.String(), want)
	}
}

func TestWebhookGroupHelp(t *testing.T) {
	code, out, _ := runCLI(t, "", "webhook", "--help")
	if code != exitOK || !strings.Contains(out, "webhook listen") || !strings.Contains(out, "Standard Webhooks") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
	code, _, errOut := runCLI(t, "", "webhook")
	if code != exitUsage || !strings.Contains(errOut, "missing subcommand") || !strings.Contains(errOut, "webhook listen") {
		t.Errorf("bare group: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestWebhookListenPublicKey: v1a signatures verify with --public-key,
// and --print-max cuts a body without splitting a character.
func TestWebhookListenPublicKey(t *testing.T) {
	priv, pub, err := webhook.NewAsymmetricSecret(strings.NewReader(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, out, _, done := startWebhookListen(t, ctx, "--public-key", pub.String(), "--print-max", "9")
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	if got := postSigned(t, client, url, "msg_ed", `{"é":"ü€"}`, priv); got != http.StatusNoContent {
		t.Errorf("v1a: status %d", got)
	}
	if got := postSigned(t, client, url, "msg_sym", `{}`, webhook.Secret{}); got != http.StatusBadRequest {
		t.Errorf("unsigned: status %d", got)
	}
	waitOutput(t, out, "400 refused")
	if want := `204 id=msg_ed age=0s 14B {"é":"ü… (5 more bytes)`; !strings.Contains(ageRE.ReplaceAllString(out.String(), "age=0s"), want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
	tr.CloseIdleConnections()
	cancel()
	<-done
}
