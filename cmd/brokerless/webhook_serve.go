package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/api"
	"github.com/brokerless/brokerless/webhook/console"
	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/source"
	"github.com/brokerless/brokerless/webhook/store"
)

var webhookServeCmd = command{
	name:     "webhook serve",
	summary:  "run the webhook dispatcher: a durable outbox, signed retrying delivery, an HTTP API",
	synopsis: "[--listen ADDR] [--db sqlite:PATH|postgres://…] [--allow-private CIDR]... [--https-only] [flags]",
	about: `
Runs the webhook dispatcher and its HTTP JSON API (under /v1/, described
by /v1/openapi.json) on --listen. Events posted to /v1/events (or with
'brokerless webhook send') are stored with one delivery per matching
endpoint in the same transaction, then POSTed to each endpoint signed as
Standard Webhooks defines (webhook-id, webhook-timestamp,
webhook-signature), at least once: a delivery that fails is retried on
--retry-schedule (immediately, 5s, 5m, 30m, 2h, 5h, 10h, 10h) with ±20%
jitter and the same webhook-id, later if the endpoint answers
Retry-After. Only 2xx is success; redirects are failures and never
followed; 410 Gone disables the endpoint, and so does failing for
--disable-after. Each endpoint has at most --concurrency attempts in
flight, so one that hangs delays no other.

The database is a SQLite file (the default, brokerless-webhook.db in the
working directory) or PostgreSQL, which several dispatchers can share:
they never attempt the same delivery at the same time, even when their
clocks disagree: leases are measured by the PostgreSQL server's clock (a
dispatcher's own clock decides only when a retry is due, so one that is
off by a minute retries a minute early or late). A dispatcher that
crashes loses nothing; its deliveries are attempted again once their
lease (twice --timeout + 10s) expires. Events older than --retention (90
days) are deleted with their deliveries and attempts, unless one is
still being retried.

With --source, each record of a logd or Kafka topic, read by a consumer
group, becomes an event: its type from the --source-type-header header
(else --source-type), its data the record's payload (a JSON string when
the payload is not JSON), its idempotency key
brokerless:source:TOPIC/PARTITION/OFFSET/HASH (API clients cannot take
keys beginning brokerless:). The
record's offset is committed only after its event is stored, so a crash
in between loses nothing and makes no duplicate event. With a SQLite
database the dispatcher is a static member of the group (instance
webhook-HOST-HASH of the database file, unless ?instance= names one), so
a restart after a crash takes its partitions back at once instead of
waiting for the dead member's session (45 s) to time out. Dispatchers
sharing a PostgreSQL database should each name their own ?instance=.

An operator console is served at / on the same listener: endpoints with
their health, recent events with their attempts, and buttons to resend,
recover and disable. Log in with an API token.

The API and the console need a bearer token. At first start (no token in the database)
an admin token is created and printed once; only its SHA-256 is stored.
Create and revoke others with POST and DELETE /v1/tokens.

Endpoints must resolve to public addresses: loopback, private, link-local
and other special ranges are refused at connect time, after DNS, unless
--allow-private names them.`,
	examples: `
# Start with a SQLite file in the working directory; note the admin token.
brokerless webhook serve

# Deliver to receivers on this machine (tests, development).
brokerless webhook serve --allow-private 127.0.0.0/8 --listen 127.0.0.1:8080

# Several dispatchers on one PostgreSQL database, HTTPS endpoints only.
brokerless webhook serve --db 'postgres://webhook@db.internal/webhook?sslmode=require' --https-only

# Operational events (endpoint.disabled, message.attempt.exhausted) to an endpoint of yours.
brokerless webhook serve --notice-endpoint ep_01JDX8…

# Each record of a logd topic becomes an event, typed by its "type" header.
brokerless webhook serve --source logd://127.0.0.1:9092/orders --source-type order.event`,
	run: runWebhookServe,
}

// webhookServeOptions are the flags of webhook serve.
type webhookServeOptions struct {
	listen         string
	db             string
	allowPrivate   []string
	httpsOnly      bool
	timeout        time.Duration
	concurrency    int
	disableAfter   time.Duration
	schedule       string
	maxBody        int64
	maxResponse    int
	retention      time.Duration
	noticeEndpoint string
	source         string
	sourceType     string
	typeHeader     string
}

func runWebhookServe(ctx context.Context, inv *invocation) error {
	var o webhookServeOptions
	fs := inv.flags()
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address of the API, host:port (port 0 picks a free one)")
	fs.StringVar(&o.db, "db", store.DefaultAddress, "database: sqlite:PATH or postgres://…")
	fs.StringArrayVar(&o.allowPrivate, "allow-private", nil, "CIDR of otherwise refused addresses endpoints may use (e.g. 127.0.0.0/8); repeatable")
	fs.BoolVar(&o.httpsOnly, "https-only", false, "refuse endpoints whose URL is not https://")
	fs.DurationVar(&o.timeout, "timeout", dispatch.DefaultTimeout, "time limit of one delivery attempt")
	fs.IntVar(&o.concurrency, "concurrency", dispatch.DefaultConcurrency, "attempts in flight to one endpoint at most")
	fs.DurationVar(&o.disableAfter, "disable-after", dispatch.DefaultDisableAfter, "disable an endpoint whose attempts all fail for this long (0: never)")
	fs.StringVar(&o.schedule, "retry-schedule", "0s,5s,5m,30m,2h,5h,10h,10h", "delays of the attempts of a delivery, comma-separated; the first is ignored (a new event goes out at once)")
	fs.Int64Var(&o.maxBody, "max-body", api.DefaultMaxBodyBytes, "largest API request body, in bytes (larger gets 413)")
	fs.IntVar(&o.maxResponse, "max-response", dispatch.DefaultMaxResponseBody, "bytes of each response body kept with its attempt")
	o.retention = dispatch.DefaultRetention
	fs.Var(durationOrNever{&o.retention}, "retention", "delete events older than this, with their deliveries and attempts, unless one is still being retried (negative, e.g. -1: never)")
	fs.StringVar(&o.noticeEndpoint, "notice-endpoint", "", "endpoint ID that operational events (endpoint.disabled, message.attempt.exhausted) are delivered to")
	fs.StringVar(&o.source, "source", "", "also make an event of each record of this log, read by a consumer group: logd://HOST:PORT/TOPIC or kafka://… (group brokerless-webhook unless ?group= names one; with SQLite a static member unless ?instance= names one)")
	fs.StringVar(&o.sourceType, "source-type", source.DefaultType, "event type of a --source record without a type header")
	fs.StringVar(&o.typeHeader, "source-type-header", source.DefaultTypeHeader, "record header holding the event type")
	if err := inv.parse(fs); err != nil {
		return err
	}
	policy, schedule, err := o.check()
	if err != nil {
		return err
	}
	var sub transport.Subscriber
	if o.source != "" {
		if sub, err = openSource(ctx, o.source, o.db, inv.log); err != nil {
			return err
		}
		defer sub.Close()
	}
	disableAfter := o.disableAfter
	if disableAfter == 0 {
		disableAfter = -1
	}
	st, err := store.Open(ctx, o.db)
	if err != nil {
		if errors.Is(err, store.ErrBadAddress) {
			return usagef("--db %s: %v", o.db, err)
		}
		return err
	}
	defer st.Close()
	client := policy.Client(o.timeout)
	defer client.CloseIdleConnections()
	d, err := dispatch.New(dispatch.Config{
		Store: st, Addresses: policy, Client: client, Timeout: o.timeout, Concurrency: o.concurrency,
		MaxInFlight: max(dispatch.DefaultMaxInFlight, o.concurrency+dispatch.DefaultQueueDepth), MaxResponseBody: o.maxResponse, NoticeEndpoint: o.noticeEndpoint,
		Retention: o.retention, Policy: dispatch.Policy{Schedule: schedule, DisableAfter: disableAfter}, Logger: inv.log,
	})
	if err != nil {
		return configError(err, map[string]string{"Timeout": "timeout", "Concurrency": "concurrency", "MaxResponseBody": "max-response",
			"Policy.Schedule": "retry-schedule"})
	}
	srv, err := api.New(api.Config{Store: st, Addresses: policy, MaxBodyBytes: o.maxBody, Notify: d.Notify, Logger: inv.log})
	if err != nil {
		return configError(err, map[string]string{"MaxBodyBytes": "max-body"})
	}
	con, err := console.New(console.Config{Store: st, Notify: d.Notify, Logger: inv.log})
	if err != nil {
		return err
	}
	if o.noticeEndpoint != "" {
		if _, err := st.GetEndpoint(ctx, o.noticeEndpoint); err != nil {
			return usagef("--notice-endpoint %s: %v", o.noticeEndpoint, err)
		}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	token, err := api.EnsureAdminToken(ctx, st, time.Now(), nil)
	if err != nil {
		ln.Close()
		return err
	}
	fmt.Fprintf(inv.err, "webhook serve: database %s\n", redactDB(o.db))
	if token != "" {
		fmt.Fprintf(inv.err, "webhook serve: admin token (shown once, stored hashed): %s\n", token)
	}
	if sub != nil {
		fmt.Fprintf(inv.err, "webhook serve: events from %s\n", o.source)
	}
	fmt.Fprintf(inv.err, "webhook serve: listening on http://%s/ (console at /, API under /v1/, OpenAPI at /v1/openapi.json)\n", ln.Addr())

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	dispatched := make(chan error, 1)
	go func() { dispatched <- d.Run(runCtx) }()
	sourced := make(chan error, 1)
	var srcStats source.Stats
	if sub != nil {
		go func() {
			sourced <- source.Run(runCtx, source.Config{Subscriber: sub, Store: st, Type: o.sourceType, TypeHeader: o.typeHeader,
				Notify: d.Notify, Logger: inv.log, Stats: &srcStats})
		}()
	}
	hs := &http.Server{Handler: console.Handler(srv, con), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	srcDone := false
	select {
	case <-ctx.Done():
	case err = <-served:
	case err = <-sourced:
		srcDone = true
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shut)
	if err == nil {
		<-served
	}
	stop()
	<-dispatched
	if sub != nil && !srcDone {
		if serr := <-sourced; err == nil {
			err = serr
		}
	}
	if sub != nil {
		fmt.Fprintf(inv.err, "webhook serve: %d records read, %d events from them, %d already stored, %d skipped as not storable\n",
			srcStats.Records.Load(), srcStats.Events.Load(), srcStats.Duplicates.Load(), srcStats.Bad.Load())
	}
	s := d.Stats()
	fmt.Fprintf(inv.err, "webhook serve: %d attempts, %d succeeded, %d failed, %d deliveries exhausted, %d endpoints disabled\n",
		s.Attempts, s.Succeeded, s.Failed, s.Exhausted, s.Disabled)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// check checks every flag before anything starts, and returns the
// address policy and the retry schedule.
func (o *webhookServeOptions) check() (webhook.AddressPolicy, []time.Duration, error) {
	var policy webhook.AddressPolicy
	if _, port, err := net.SplitHostPort(o.listen); err != nil {
		return policy, nil, usagef("--listen %s: must be host:port, e.g. 127.0.0.1:8080", o.listen)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return policy, nil, usagef("--listen %s: must have a port in [0, 65535]", o.listen)
	}
	if !strings.HasPrefix(o.db, "sqlite:") && !strings.HasPrefix(o.db, "postgres://") && !strings.HasPrefix(o.db, "postgresql://") || o.db == "sqlite:" {
		return policy, nil, usagef("--db %s: want sqlite:PATH or postgres://…", o.db)
	}
	for _, c := range o.allowPrivate {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return policy, nil, usagef("--allow-private %s: want a CIDR such as 127.0.0.0/8", c)
		}
		policy.Allow = append(policy.Allow, p.Masked())
	}
	policy.HTTPSOnly = o.httpsOnly
	var schedule []time.Duration
	for _, f := range strings.Split(o.schedule, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return policy, nil, usagef("--retry-schedule %s: %q: want durations >= 0 separated by commas", o.schedule, f)
		}
		schedule = append(schedule, d)
	}
	switch {
	case o.timeout <= 0:
		return policy, nil, usagef("--timeout %s: must be > 0", o.timeout)
	case o.concurrency <= 0:
		return policy, nil, usagef("--concurrency %d: must be > 0", o.concurrency)
	case o.disableAfter < 0:
		return policy, nil, usagef("--disable-after %s: must be >= 0", o.disableAfter)
	case o.maxBody <= 0:
		return policy, nil, usagef("--max-body %d: must be > 0", o.maxBody)
	case o.maxResponse <= 0:
		return policy, nil, usagef("--max-response %d: must be > 0", o.maxResponse)
	case o.retention == 0:
		return policy, nil, usagef("--retention 0s: must be > 0, or negative for never")
	}
	return policy, schedule, nil
}

// openSource opens the --source log as a member of a consumer group
// (brokerless-webhook unless the URL names one); with a SQLite database
// db, a static member named after the host and the file (sourceInstance)
// unless the URL names one. Its client logs to log.
func openSource(ctx context.Context, raw, db string, log *slog.Logger) (transport.Subscriber, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "logd" && u.Scheme != "kafka") {
		return nil, usagef("--source %s: want logd://HOST:PORT/TOPIC or kafka://HOST:PORT/TOPIC", raw)
	}
	q := u.Query()
	if q.Get("group") == "" {
		q.Set("group", "brokerless-webhook")
	}
	if !q.Has("instance") {
		if id := sourceInstance(db); id != "" {
			q.Set("instance", id)
		}
	}
	u.RawQuery = q.Encode()
	ep, err := transport.Open(ctx, u.String(), transport.WithLogger(log))
	if err != nil {
		return nil, &oneLineError{fmt.Errorf("--source %s: %w", raw, err)}
	}
	sub, err := ep.Subscriber(ctx)
	if err != nil {
		return nil, &oneLineError{fmt.Errorf("--source %s: %w", raw, err)}
	}
	if _, ok := sub.(transport.Acknowledger); !ok {
		sub.Close()
		return nil, usagef("--source %s: %v", raw, source.ErrNotAcknowledging)
	}
	return sub, nil
}

// sourceInstance is the static group member name of a dispatcher on the
// SQLite database db: webhook-HOST-HASH, HASH the start of the SHA-256 of
// the file's absolute path, so the same dispatcher restarted has the same
// name and two on one host have two. "" for PostgreSQL, which several
// dispatchers share: they name themselves (?instance=).
func sourceInstance(db string) string {
	path, ok := strings.CutPrefix(db, "sqlite:")
	if !ok {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(path))
	return fmt.Sprintf("webhook-%s-%x", host, sum[:6])
}

// redactDB hides a password in a database address.
func redactDB(addr string) string {
	if i := strings.Index(addr, "://"); i >= 0 {
		if at := strings.Index(addr[i+3:], "@"); at >= 0 {
			cred := addr[i+3 : i+3+at]
			if c := strings.Index(cred, ":"); c >= 0 {
				return addr[:i+3] + cred[:c] + ":xxxxx" + addr[i+3+at:]
			}
		}
	}
	return addr
}
