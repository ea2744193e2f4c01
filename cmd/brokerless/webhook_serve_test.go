package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// TestWebhookServeBadFlags: every bad flag value exits 2 naming the
// flag, before a database file is created.
func TestWebhookServeBadFlags(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "w.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "nope"}, "--listen nope"},
		{[]string{"--listen", "127.0.0.1:99999"}, "--listen 127.0.0.1:99999"},
		{[]string{"--db", "mysql://x/y"}, "--db mysql://x/y"},
		{[]string{"--db", "sqlite:"}, "--db sqlite:"},
		{[]string{"--allow-private", "10.0.0.0/33"}, "--allow-private 10.0.0.0/33"},
		{[]string{"--timeout", "0s"}, "--timeout 0s"},
		{[]string{"--concurrency", "0"}, "--concurrency 0"},
		{[]string{"--retry-schedule", "0s,5s,soon"}, "--retry-schedule"},
		{[]string{"--retry-schedule", "0s,-5s"}, "--retry-schedule"},
		{[]string{"--max-body", "0"}, "--max-body 0"},
		{[]string{"--max-response", "-1"}, "--max-response -1"},
		{[]string{"--disable-after", "-1h"}, "--disable-after -1h"},
		{[]string{"--retention", "0"}, "--retention 0s"},
		{[]string{"--timeout", "soon"}, "--timeout"},
		{[]string{"--bogus"}, "--bogus"},
		{[]string{"--source", "mcast://239.1.1.1:7000"}, "--source mcast://239.1.1.1:7000"},
		{[]string{"--source", "logd://127.0.0.1:1/t?bogus=1"}, "--source logd://127.0.0.1:1/t?bogus=1"},
	} {
		args := append([]string{"webhook", "serve", "--db", db}, tc.args...)
		if tc.args[0] == "--db" {
			args = append([]string{"webhook", "serve"}, tc.args...)
		}
		code, out, errOut := runCLI(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(out+errOut, "listening") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("bad flags created %v", entries)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"webhook", "send", "--data", "{}", "--token", "x"}, "--type is required"},
		{[]string{"webhook", "send", "--type", "t", "--token", "x"}, "--data is required"},
		{[]string{"webhook", "send", "--type", "t", "--data", "{", "--token", "x"}, "--data {: not valid JSON"},
		{[]string{"webhook", "send", "--type", "t", "--data", "@" + filepath.Join(dir, "none.json"), "--token", "x"}, "--data @"},
		{[]string{"webhook", "send", "--type", "t", "--data", "{}", "--token", "x", "--server", "ftp://h"}, "--server ftp://h"},
		{[]string{"webhook", "endpoints", "add", "--token", "x"}, "--url is required"},
		{[]string{"webhook", "endpoints", "add", "--url", "nope", "--token", "x"}, "--url nope"},
		{[]string{"webhook", "endpoints", "add", "--url", "http://h/", "--rate-limit", "-1", "--token", "x"}, "--rate-limit -1"},
		{[]string{"webhook", "endpoints", "rm", "--token", "x"}, "missing ID"},
	} {
		code, _, errOut := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 with %q", tc.args, code, errOut, tc.want)
		}
	}
	t.Setenv("BROKERLESS_WEBHOOK_TOKEN", "")
	if code, _, errOut := runCLI(t, "", "webhook", "endpoints", "list"); code != exitUsage || !strings.Contains(errOut, "--token is required") {
		t.Errorf("no token: exit %d, %q", code, errOut)
	}
}

var (
	serveAddrRE  = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)/`)
	serveTokenRE = regexp.MustCompile(`admin token \(shown once, stored hashed\): (bwt_[A-Za-z0-9_-]+)`)
)

// TestWebhookServeEndToEnd: serve prints its address and the admin
// token; endpoints add/list/rm and send work against it, and the event
// reaches the receiver signed with the endpoint's secret.
func TestWebhookServeEndToEnd(t *testing.T) {
	type delivery struct {
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), b}
	}))
	defer rcv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut := newSyncBuffer("listening on")
	exited := make(chan int, 1)
	db := "sqlite:" + filepath.Join(t.TempDir(), "w.db")
	go func() {
		// --concurrency above the default in-flight cap (1024) raises the cap.
		exited <- run(ctx, []string{"webhook", "serve", "--listen", "127.0.0.1:0", "--db", db, "--allow-private", "127.0.0.0/8", "--concurrency", "3000"},
			stdio{in: strings.NewReader(""), out: io.Discard, err: errOut})
	}()
	select {
	case <-errOut.seen:
	case code := <-exited:
		t.Fatalf("serve exited %d:\n%s", code, errOut)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start:\n%s", errOut)
	}
	addr, tok := serveAddrRE.FindStringSubmatch(errOut.String()), serveTokenRE.FindStringSubmatch(errOut.String())
	if addr == nil || tok == nil {
		t.Fatalf("no address or token in:\n%s", errOut)
	}
	client := []string{"--server", addr[1], "--token", tok[1]}
	code, out, stderr := runCLI(t, "", append([]string{"webhook", "endpoints", "add", "--url", rcv.URL + "/hooks", "--event-type", "order.*"}, client...)...)
	m := regexp.MustCompile(`(?m)^id +(ep_\w+)\nsecret +(whsec_\S+)$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("endpoints add: %d %q %q", code, out, stderr)
	}
	secret, err := webhook.ParseSecret(m[2])
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "", append([]string{"webhook", "endpoints", "list"}, client...)...)
	if code != 0 || !strings.Contains(out, m[1]) || !strings.Contains(out, "order.*") {
		t.Fatalf("endpoints list: %d %q", code, out)
	}
	code, out, stderr = runCLI(t, `{"order": 7}`, append([]string{"webhook", "send", "--type", "order.placed", "--data", "@-"}, client...)...)
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "msg_") {
		t.Fatalf("send: %d %q %q", code, out, stderr)
	}
	select {
	case d := <-got:
		v := &webhook.Verifier{Secrets: []webhook.Secret{secret}}
		if err := v.Verify(d.header, d.body); err != nil || d.header.Get("webhook-id") != id || !strings.Contains(string(d.body), `"data":{"order":7}`) {
			t.Fatalf("delivery %v %s: %v", d.header, d.body, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery")
	}
	if code, out, _ := runCLI(t, "", append([]string{"webhook", "endpoints", "rm", m[1]}, client...)...); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("endpoints rm: %d %q", code, out)
	}
	if code, _, stderr := runCLI(t, "", append([]string{"webhook", "endpoints", "rm", m[1]}, client...)...); code != exitFailure || !strings.Contains(stderr, "404") {
		t.Fatalf("second rm: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "", "webhook", "endpoints", "list", "--server", addr[1], "--token", "bwt_wrong"); code != exitFailure || !strings.Contains(stderr, "401") {
		t.Fatalf("wrong token: %d %q", code, stderr)
	}
	cancel()
	if code := <-exited; code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, errOut)
	}
}

// TestWebhookServeCrashSafety: 1,000 events are pending against a slow
// receiver; the dispatcher process is SIGKILLed mid-delivery and
// restarted on the same database: every event is delivered at least
// once, each with its original webhook-id and a valid signature. On
// SQLite and on PostgreSQL.
func TestWebhookServeCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a dispatcher process (about 15 s per database)")
	}
	t.Run("sqlite", func(t *testing.T) { crashSafety(t, "sqlite:"+filepath.Join(t.TempDir(), "w.db")) })
	t.Run("postgres", func(t *testing.T) { crashSafety(t, pgtest.Start(t).NewDatabase(t)) })
}

func crashSafety(t *testing.T, db string) {
	events := 1000
	if raceEnabled {
		events = 300 // pure-Go SQLite is some 50 times slower under -race
	}
	var (
		mu      sync.Mutex
		count   = map[string]int{}
		bad     []string
		verify  *webhook.Verifier
		held    int
		holding = make(chan struct{}, 2*events) // a request is held
		hold    = make(chan struct{})           // closed: requests go through
		arrived = make(chan string, 2*events)
	)
	// The receiver holds each request until hold is closed; a request
	// whose sender is gone by then is not a delivery.
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		h := hold
		held++
		mu.Unlock()
		select {
		case holding <- struct{}{}:
		default:
		}
		select {
		case <-h:
		case <-r.Context().Done():
		}
		mu.Lock()
		held--
		mu.Unlock()
		if r.Context().Err() != nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // a slow receiver
		mu.Lock()
		if err := verify.Verify(r.Header, b); err != nil {
			bad = append(bad, err.Error())
		}
		id := r.Header.Get("webhook-id")
		count[id]++
		first := count[id] == 1
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		if first {
			arrived <- id
		}
	}))
	defer rcv.Close()
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-hold:
		default:
			close(hold)
		}
	}
	defer release()
	args := []string{"webhook", "serve", "--listen", "127.0.0.1:0", "--db", db, "--allow-private", "127.0.0.0/8", "--timeout", "1s"}
	first := startChild(t, "listening on", args...)
	addr, tok := serveAddrRE.FindStringSubmatch(first.stderr.String()), serveTokenRE.FindStringSubmatch(first.stderr.String())
	if addr == nil || tok == nil {
		first.kill(t)
		t.Fatalf("no address or token in:\n%s", first.stderr)
	}
	client := []string{"--server", addr[1], "--token", tok[1]}
	code, out, stderr := runCLI(t, "", append([]string{"webhook", "endpoints", "add", "--url", rcv.URL}, client...)...)
	m := regexp.MustCompile(`secret +(whsec_\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		first.kill(t)
		t.Fatalf("endpoints add: %d %q %q", code, out, stderr)
	}
	sec, _ := webhook.ParseSecret(m[1])
	verify = &webhook.Verifier{Secrets: []webhook.Secret{sec}}
	// Post the events while the receiver holds every request.
	sent := map[string]bool{}
	posted := time.Now()
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	for i := range events {
		req, _ := http.NewRequest("POST", addr[1]+"/v1/events", strings.NewReader(`{"type":"t","data":{"i":`+strconv.Itoa(i)+`}}`))
		req.Header.Set("Authorization", "Bearer "+tok[1])
		resp, err := hc.Do(req)
		if err != nil {
			first.kill(t)
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := regexp.MustCompile(`"id":"(msg_\w+)"`).FindSubmatch(b)
		if resp.StatusCode != 202 || id == nil {
			first.kill(t)
			t.Fatalf("POST /v1/events: %d %s", resp.StatusCode, b)
		}
		sent[string(id[1])] = true
	}
	t.Logf("%d events stored in %v", events, time.Since(posted))
	release()
	started := time.Now()
	deadline := time.After(5 * time.Minute)
	waitFor := func(n int) {
		for i := 0; i < n; i++ {
			select {
			case <-arrived:
			case <-deadline:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%d of %d events delivered before the deadline", len(count), events)
			}
		}
	}
	waitFor(100)
	// Hold the next requests, and kill the dispatcher while its attempts
	// (one per --concurrency slot) are held: they are in flight, never
	// answered, and must be made again after the restart.
	mu.Lock()
	hold = make(chan struct{})
	mu.Unlock()
	for {
		mu.Lock()
		n := held
		mu.Unlock()
		if n == 4 {
			break
		}
		select {
		case <-deadline:
			first.kill(t)
			t.Fatalf("the dispatcher did not fill its 4 slots")
		case <-holding:
		}
	}
	first.kill(t)
	mu.Lock()
	before := len(count)
	mu.Unlock()
	second := startChild(t, "listening on", args...)
	if strings.Contains(second.stderr.String(), "admin token") {
		t.Errorf("a second admin token at restart:\n%s", second.stderr)
	}
	release()
	waitFor(events - 100) // every first delivery of an id arrives once on arrived
	second.stop(t)
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("%d deliveries failed verification, first: %s", len(bad), bad[0])
	}
	dups := 0
	for id, n := range count {
		if !sent[id] {
			t.Fatalf("delivered webhook-id %s was never sent", id)
		}
		dups += n - 1
	}
	if len(count) != events {
		t.Fatalf("%d distinct events delivered, want %d", len(count), events)
	}
	t.Logf("%d delivered before the kill, %d duplicates (attempts in flight at the kill), all delivered in %v", before, dups, time.Since(started))
}
