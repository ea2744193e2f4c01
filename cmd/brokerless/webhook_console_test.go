package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brokerless/brokerless/transport/peertest"
)

// apiCall sends a JSON request to the dispatcher's API and decodes the answer into out.
func apiCall(t *testing.T, base, token, method, path string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

type consoleAttempt struct {
	StatusCode int    `json:"status_code"`
	Outcome    string `json:"outcome"`
}

type consoleDelivery struct {
	Status   string           `json:"status"`
	Attempts []consoleAttempt `json:"attempts"`
}

// TestWebhookConsoleBrowser: an endpoint created through the API, an
// event it fails (one attempt, 500), then in headless chromium: the
// console's login form, the events page showing the 500, the "Resend"
// button pressed, and the new attempt (200, succeeded) on the page.
func TestWebhookConsoleBrowser(t *testing.T) {
	chromium := peertest.LookPath(t, "chromium", "apt-get install chromium (.ci/install.d/80-chromium.sh)")
	var failing atomic.Bool
	failing.Store(true)
	var hits atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if failing.Load() {
			http.Error(w, "receiver down", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut := newSyncBuffer("listening on")
	exited := make(chan int, 1)
	db := "sqlite:" + filepath.Join(t.TempDir(), "w.db")
	go func() {
		// One attempt per delivery: the event fails for good at once.
		exited <- run(ctx, []string{"webhook", "serve", "--listen", "127.0.0.1:0", "--db", db, "--allow-private", "127.0.0.0/8", "--retry-schedule", "0s"},
			stdio{in: strings.NewReader(""), out: io.Discard, err: errOut})
	}()
	defer func() {
		cancel()
		<-exited
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
	base, token := addr[1], tok[1]

	var ep struct{ ID string }
	if code := apiCall(t, base, token, "POST", "/v1/endpoints", map[string]any{"url": rcv.URL + "/hooks"}, &ep); code != http.StatusCreated {
		t.Fatalf("POST /v1/endpoints: %d", code)
	}
	var ev struct{ ID string }
	if code := apiCall(t, base, token, "POST", "/v1/events", map[string]any{"type": "order.placed", "data": map[string]int{"order": 7}}, &ev); code != http.StatusAccepted {
		t.Fatalf("POST /v1/events: %d", code)
	}
	deliveries := func() []consoleDelivery {
		var out struct{ Data []consoleDelivery }
		apiCall(t, base, token, "GET", "/v1/events/"+ev.ID+"/deliveries", nil, &out)
		return out.Data
	}
	waitFor(t, "the delivery to fail", func() bool {
		d := deliveries()
		return len(d) == 1 && d[0].Status == "failed"
	})
	failing.Store(false)

	// Chromium makes a directory in $TMPDIR for its singleton socket and
	// leaves it behind when it is killed: the test's own one is removed.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.Flag("headless", "new"),
		chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Env("TMPDIR="+t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()
	bctx, tcancel := context.WithTimeout(bctx, 90*time.Second)
	defer tcancel()

	row := fmt.Sprintf(`tr[data-event=%q]`, ev.ID)
	fail := func(step string, err error) {
		t.Helper()
		t.Fatalf("browser, %s: %v\nserve:\n%s", step, err, errOut)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/events"), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
		fail("opening the console", err)
	}
	loginURL, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		fail("reading the location", err)
	}
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("endpoints")),
		chromedp.Navigate(base+"/events"),
		chromedp.WaitVisible(chromedp.CSS(row)),
	); err != nil {
		fail("logging in", err)
	}
	before, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(row+" .delivery")))
	if err != nil {
		fail("reading the delivery", err)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(row+" button.resend")), chromedp.WaitVisible(chromedp.ID("flash"))); err != nil {
		fail("pressing Resend", err)
	}
	flash, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("flash")))
	if err != nil {
		fail("reading the message", err)
	}
	if !strings.HasSuffix(loginURL, "/login") {
		t.Errorf("the console without a session went to %s, want /login", loginURL)
	}
	if !strings.Contains(before, "failed") || !strings.Contains(before, "500") {
		t.Errorf("the event's delivery before resend reads %q, want failed with a 500", before)
	}
	if !strings.Contains(flash, "1 deliveries scheduled again") {
		t.Errorf("after Resend the page says %q", flash)
	}
	// The new attempt appears on the page (reloaded until it is recorded).
	var after string
	var attempts int
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/events"), chromedp.WaitVisible(chromedp.CSS(row))); err != nil {
			fail("reloading the events", err)
		}
		var err error
		if after, err = chromedp.Run(bctx, chromedp.Text(chromedp.CSS(row+" .delivery"))); err != nil {
			fail("reading the delivery", err)
		}
		nodes, err := chromedp.Run(bctx, chromedp.Nodes(chromedp.CSSAll(row+" .attempt")))
		if err != nil {
			fail("counting the attempts", err)
		}
		attempts = len(nodes)
		if strings.Contains(after, "succeeded") || time.Now().After(deadline) {
			break
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-bctx.Done():
			t.Fatal(bctx.Err())
		}
	}
	if attempts != 2 || !strings.Contains(after, "succeeded") || !strings.Contains(after, "200") {
		t.Errorf("after Resend the page shows %d attempts: %q, want 2, the new one 200 and succeeded", attempts, after)
	}
	d := deliveries()
	if len(d) != 1 || len(d[0].Attempts) != 2 || d[0].Attempts[1].StatusCode != 200 || hits.Load() != 2 {
		t.Errorf("the API shows %+v and the receiver got %d requests, want 2 attempts, the second 200", d, hits.Load())
	}
}

// TestWebhookServeConsole: webhook serve answers the console at / (a
// redirect to its login form without a session) beside the API, which
// still wants its bearer token. It needs no browser.
func TestWebhookServeConsole(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut := newSyncBuffer("listening on")
	exited := make(chan int, 1)
	db := "sqlite:" + filepath.Join(t.TempDir(), "w.db")
	go func() {
		exited <- run(ctx, []string{"webhook", "serve", "--listen", "127.0.0.1:0", "--db", db}, stdio{in: strings.NewReader(""), out: io.Discard, err: errOut})
	}()
	defer func() {
		cancel()
		<-exited
	}()
	select {
	case <-errOut.seen:
	case code := <-exited:
		t.Fatalf("serve exited %d:\n%s", code, errOut)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start:\n%s", errOut)
	}
	addr := serveAddrRE.FindStringSubmatch(errOut.String())
	if addr == nil || !strings.Contains(errOut.String(), "console at /") {
		t.Fatalf("no address or no console in:\n%s", errOut)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		resp, err := client.Get(addr[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := get("/"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("GET /: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get("/login"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="token"`) {
		t.Errorf("GET /login: %d, no token field:\n%s", resp.StatusCode, body)
	}
	if resp, _ := get("/v1/endpoints"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/endpoints without a token: %d, want 401", resp.StatusCode)
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
