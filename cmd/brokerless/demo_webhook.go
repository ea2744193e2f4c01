package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/api"
	"github.com/brokerless/brokerless/webhook/console"
	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/store"
)

var demoWebhookCmd = command{
	name:     "demo webhook",
	summary:  "a webhook dispatcher and two receivers (one flaky) on this machine: see retries deliver everything",
	synopsis: "[--events 20] [--fail-first 2] [--timeout 30s]",
	about: `
Runs, inside this process and on 127.0.0.1 only, a webhook dispatcher with
its API and console on a SQLite file in a temporary folder, and two
receivers that verify each delivery's signature as 'brokerless webhook
listen' does: "healthy", which accepts every delivery, and "flaky", which
answers 503 to the first --fail-first attempts of each event, then
accepts it. Both endpoints are created through the dispatcher's API, and
--events events are posted to it.

The dispatcher retries on a short schedule (100ms, 200ms, 500ms after the
first attempt, ±20% jitter) instead of the real one (5s, 5m, 30m, …), so
the demo ends in about a second. When every delivery has succeeded (or
--timeout has passed) a table shows, per endpoint: events, attempts,
deliveries delivered, retried (more than one attempt), still pending and
failed, and the deliveries its receiver verified and accepted.

The exit status is 0 when every event was delivered to both endpoints, 1
otherwise, with the reason. The temporary folder is removed at the end.`,
	examples: `
# The default: 20 events, the flaky receiver failing each one twice.
brokerless demo webhook

# More events; the flaky receiver failing three times (the last retry succeeds).
brokerless demo webhook --events 200 --fail-first 3

# No failures at all.
brokerless demo webhook --fail-first 0`,
	run: runDemoWebhookCmd,
}

// demoWebhookSchedule is the demo's retry schedule: 4 attempts, the
// first at once.
var demoWebhookSchedule = []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}

// errWebhookDemoFailed reports a demo in which some event was not delivered.
var errWebhookDemoFailed = errors.New("not every event was delivered")

type demoWebhookOptions struct {
	events    int
	failFirst int
	timeout   time.Duration
	log       *slog.Logger
}

func runDemoWebhookCmd(ctx context.Context, inv *invocation) error {
	o := demoWebhookOptions{log: inv.log}
	fs := inv.flags()
	fs.IntVar(&o.events, "events", 20, "events to send")
	fs.IntVar(&o.failFirst, "fail-first", 2, "attempts of each event the flaky receiver answers with 503 before accepting it")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up waiting for the deliveries after this long")
	if err := inv.parse(fs); err != nil {
		return err
	}
	switch {
	case o.events < 1 || o.events > 100000:
		return usagef("--events %d: must be in [1, 100000]", o.events)
	case o.failFirst < 0 || o.failFirst >= len(demoWebhookSchedule):
		return usagef("--fail-first %d: must be in [0, %d] (the demo makes %d attempts per delivery)", o.failFirst, len(demoWebhookSchedule)-1, len(demoWebhookSchedule))
	case o.timeout <= 0:
		return usagef("--timeout %v: must be > 0", o.timeout)
	}
	res, err := runDemoWebhook(ctx, o, inv.out)
	if err != nil {
		return err
	}
	if len(res.problems()) > 0 {
		return errWebhookDemoFailed
	}
	return nil
}

// demoReceiver is one in-process receiver: a webhook.Receiver verifying
// signatures in front of a handler failing the first attempts of each event.
type demoReceiver struct {
	name      string
	about     string
	failFirst int
	srv       *http.Server
	ln        net.Listener
	rc        *webhook.Receiver
	mu        sync.Mutex
	seen      map[string]int // attempts per webhook-id
	accepted  atomic.Int64
}

// Every event of the run is remembered (DedupSize at least --events): all
// are sent within the Tolerance, so none could be forgotten safely.
func startDemoReceiver(name, about string, failFirst, events int, sec webhook.Secret, log *slog.Logger) (*demoReceiver, error) {
	r := &demoReceiver{name: name, about: about, failFirst: failFirst, seen: map[string]int{}}
	rc, err := webhook.NewReceiver(webhook.ReceiverConfig{Verifier: &webhook.Verifier{Secrets: []webhook.Secret{sec}},
		DedupSize: max(webhook.DefaultDedupSize, events), Logger: log},
		http.HandlerFunc(r.deliver))
	if err != nil {
		return nil, err
	}
	r.rc = rc
	if r.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	r.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(r.ln)
	return r, nil
}

func (r *demoReceiver) deliver(w http.ResponseWriter, req *http.Request) {
	d, _ := webhook.DeliveryFrom(req)
	r.mu.Lock()
	r.seen[d.ID]++
	n := r.seen[d.ID]
	r.mu.Unlock()
	if n <= r.failFirst {
		http.Error(w, fmt.Sprintf("%s: failing attempt %d of %d on purpose", r.name, n, r.failFirst), http.StatusServiceUnavailable)
		return
	}
	r.accepted.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

func (r *demoReceiver) url() string { return "http://" + r.ln.Addr().String() + "/hooks/" + r.name }

func (r *demoReceiver) close() {
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r.srv.Shutdown(shut)
}

// demoEndpointResult is one endpoint's line of the summary.
type demoEndpointResult struct {
	name, id                                              string
	events, attempts, delivered, retried, pending, failed int
	accepted                                              int64
	rejected                                              uint64
}

type demoWebhookResult struct {
	sent      int
	endpoints []demoEndpointResult
	elapsed   time.Duration
	timedOut  bool
}

// problems says, one line each, what kept the demo from delivering every
// event to every endpoint; none means success.
func (r *demoWebhookResult) problems() []string {
	var p []string
	if r.timedOut {
		p = append(p, "gave up waiting for the deliveries (--timeout)")
	}
	for _, e := range r.endpoints {
		if e.events != r.sent || e.delivered != r.sent {
			p = append(p, fmt.Sprintf("%s: %d of %d events delivered (%d pending, %d failed)", e.name, e.delivered, r.sent, e.pending, e.failed))
		}
		if e.rejected > 0 {
			p = append(p, fmt.Sprintf("%s: the receiver refused %d requests (bad signature or headers)", e.name, e.rejected))
		}
	}
	return p
}

// runDemoWebhook runs the demo and writes its report to out. The error is
// for a demo that could not run or was interrupted; whether every event
// was delivered is in the result (see demoWebhookResult.problems).
func runDemoWebhook(ctx context.Context, o demoWebhookOptions, out io.Writer) (*demoWebhookResult, error) {
	dir, err := os.MkdirTemp("", "brokerless-demo-webhook-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "webhook.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()

	policy := webhook.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	d, err := dispatch.New(dispatch.Config{Store: st, Addresses: policy, Timeout: 10 * time.Second,
		Policy: dispatch.Policy{Schedule: demoWebhookSchedule}, Logger: o.log})
	if err != nil {
		return nil, err
	}
	srv, err := api.New(api.Config{Store: st, Addresses: policy, Notify: d.Notify, Logger: o.log})
	if err != nil {
		return nil, err
	}
	con, err := console.New(console.Config{Store: st, Notify: d.Notify, Logger: o.log})
	if err != nil {
		return nil, err
	}
	token, err := api.EnsureAdminToken(ctx, st, time.Now(), nil)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: console.Handler(srv, con), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	runCtx, stop := context.WithCancel(ctx)
	dispatched := make(chan error, 1)
	go func() { dispatched <- d.Run(runCtx) }()
	defer func() {
		stop()
		<-dispatched
	}()

	sec, err := webhook.NewSecret(rand.Reader)
	if err != nil {
		return nil, err
	}
	healthy, err := startDemoReceiver("healthy", "accepts every delivery", 0, o.events, sec, o.log)
	if err != nil {
		return nil, err
	}
	defer healthy.close()
	flaky, err := startDemoReceiver("flaky", flakyReceiverDoes(o.failFirst), o.failFirst, o.events, sec, o.log)
	if err != nil {
		return nil, err
	}
	defer flaky.close()
	receivers := []*demoReceiver{healthy, flaky}

	base := "http://" + ln.Addr().String()
	cl := &demoAPI{base: base, token: token}
	ids := make([]string, len(receivers))
	for i, r := range receivers {
		var ep struct {
			ID string `json:"id"`
		}
		if err := cl.call(ctx, "POST", "/v1/endpoints", map[string]any{"url": r.url(), "description": r.name + ": " + r.about, "secret": sec.String()}, &ep); err != nil {
			return nil, fmt.Errorf("creating the %s endpoint: %w", r.name, err)
		}
		ids[i] = ep.ID
	}
	fmt.Fprintf(out, "demo webhook: dispatcher on %s (SQLite in %s), retry schedule 0, 100ms, 200ms, 500ms\n", base, dir)
	for i, r := range receivers {
		fmt.Fprintf(out, "  endpoint %s -> %s receiver at %s (%s)\n", ids[i], r.name, r.url(), r.about)
	}
	fmt.Fprintf(out, "sending %d events through POST /v1/events\n\n", o.events)

	start := time.Now()
	var events []string
	for i := range o.events {
		var ev struct {
			ID string `json:"id"`
		}
		data := map[string]any{"order": i + 1, "amount_cents": 1000 + 37*i}
		if err := cl.call(ctx, "POST", "/v1/events", map[string]any{"type": "order.placed", "data": data, "idempotency_key": fmt.Sprintf("demo-order-%d", i+1)}, &ev); err != nil {
			return nil, fmt.Errorf("sending event %d: %w", i+1, err)
		}
		events = append(events, ev.ID)
	}

	res := &demoWebhookResult{sent: len(events)}
	deadline := time.NewTimer(o.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := demoWebhookTally(ctx, st, events, ids, res)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			return nil, errInterrupted
		case <-deadline.C:
			res.timedOut = true
		case <-tick.C:
		}
		if res.timedOut {
			break
		}
	}
	res.elapsed = time.Since(start)
	for i, r := range receivers {
		s := r.rc.Stats()
		res.endpoints[i].name = r.name
		res.endpoints[i].accepted = r.accepted.Load()
		res.endpoints[i].rejected = s.BadRequest + s.Unauthorized + s.TooLarge + s.BadMethod
	}
	writeDemoWebhookReport(out, res)
	return res, nil
}

// demoWebhookTally counts, per endpoint, the deliveries of the events
// and their attempts, and reports whether none is pending.
func demoWebhookTally(ctx context.Context, st store.Store, events, endpoints []string, res *demoWebhookResult) (bool, error) {
	res.endpoints = make([]demoEndpointResult, len(endpoints))
	at := map[string]int{}
	for i, id := range endpoints {
		res.endpoints[i].id = id
		at[id] = i
	}
	done := true
	for _, id := range events {
		ds, err := st.ListDeliveries(ctx, id)
		if err != nil {
			return false, err
		}
		for _, d := range ds {
			i, ok := at[d.EndpointID]
			if !ok {
				continue
			}
			e := &res.endpoints[i]
			e.events++
			e.attempts += d.Attempts
			if d.Attempts > 1 {
				e.retried++
			}
			switch d.Status {
			case store.StatusSucceeded:
				e.delivered++
			case store.StatusFailed:
				e.failed++
			default:
				e.pending++
				done = false
			}
		}
	}
	return done, nil
}

// flakyReceiverDoes describes the flaky receiver failing the first n
// attempts of each event.
func flakyReceiverDoes(n int) string {
	switch n {
	case 0:
		return "--fail-first 0: accepts every delivery"
	case 1:
		return "answers 503 to the first attempt of each event"
	}
	return fmt.Sprintf("answers 503 to the first %d attempts of each event", n)
}

func writeDemoWebhookReport(w io.Writer, r *demoWebhookResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "endpoint\treceiver\tevents\tattempts\tdelivered\tretried\tpending\tfailed\taccepted\t")
	for _, e := range r.endpoints {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", e.id, e.name, e.events, e.attempts, e.delivered, e.retried, e.pending, e.failed, e.accepted)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if p := r.problems(); len(p) > 0 {
		fmt.Fprintf(w, "FAIL after %v:\n  %s\n", r.elapsed.Round(time.Millisecond), strings.Join(p, "\n  "))
		return
	}
	retried := 0
	for _, e := range r.endpoints {
		retried += e.retried
	}
	how := "the flaky one after its retries"
	if retried == 0 {
		how = "none retried"
	}
	fmt.Fprintf(w, "OK: all %d events delivered to both endpoints in %v, signed, %s.\n", r.sent, r.elapsed.Round(time.Millisecond), how)
}

// demoAPI is a small client of the dispatcher's API.
type demoAPI struct {
	base, token string
}

func (c *demoAPI) call(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}
