package matrix

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/store"
)

// The webhook contenders deliver each message as a signed POST (Standard
// Webhooks) to one receiver per subscriber, an HTTP server here that
// answers 204: the body is the dispatcher's envelope, {"type", "timestamp",
// "data": {"p": base64 of the payload}}, for both.

func webhookCan(o Options, durability string) error {
	switch o.Kind {
	case Loss:
		return errTCPLoss
	case Durability:
		return fmt.Errorf("%w: %s", ErrNotApplicable, durability)
	}
	return nil
}

// webhookData is the event data carrying a payload.
func webhookData(p []byte) json.RawMessage {
	b, _ := json.Marshal(struct {
		P []byte `json:"p"`
	}{p})
	return b
}

// receiver is a webhook endpoint: an HTTP server on loopback.
type receiver struct {
	callbackSub
	srv *http.Server
	url string
}

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hook"}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	var ev struct {
		Data struct {
			P []byte `json:"p"`
		} `json:"data"`
	}
	if err := json.NewDecoder(req.Body).Decode(&ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	r.deliver(ev.Data.P)
}

func newReceivers(n int) ([]*receiver, error) {
	var rs []*receiver
	for range n {
		r, err := newReceiver()
		if err != nil {
			closeReceivers(rs)
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func closeReceivers(rs []*receiver) {
	for _, r := range rs {
		r.srv.Close()
	}
}

func subsOf(rs []*receiver) []Sub {
	subs := make([]Sub, len(rs))
	for i, r := range rs {
		subs[i] = r
	}
	return subs
}

func benchSecret() webhook.Secret {
	s, _ := webhook.NewSecret(rand.Reader)
	return s
}

// httpLoop is the baseline: a plain http.Client (its defaults) POSTing
// each signed body to each receiver in turn, waiting for each answer.
// Nothing is stored or retried.
type httpLoop struct{}

func (httpLoop) Name() string        { return "http-loop" }
func (httpLoop) Baseline() string    { return "" }
func (httpLoop) Peer() string        { return "" }
func (httpLoop) Can(o Options) error { return webhookCan(o, "stores nothing") }

type httpLoopLink struct {
	rs     []*receiver
	client *http.Client
	secret webhook.Secret
}

func (httpLoop) Open(_ context.Context, o Options) (Link, error) {
	rs, err := newReceivers(o.Subscribers)
	if err != nil {
		return nil, err
	}
	return &httpLoopLink{rs: rs, client: &http.Client{}, secret: benchSecret()}, nil
}

func (l *httpLoopLink) Send(p []byte) error {
	ev := dispatch.NewEvent("bench", webhookData(p), "", time.Now())
	for _, r := range l.rs {
		req, err := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(ev.Payload))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		webhook.SetHeaders(req.Header, ev.ID, time.Now(), ev.Payload, l.secret)
		resp, err := l.client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("POST %s: %s", r.url, resp.Status)
		}
	}
	return nil
}

func (l *httpLoopLink) Flush() error { return nil }
func (l *httpLoopLink) Subs() []Sub  { return subsOf(l.rs) }

func (l *httpLoopLink) Close() error {
	l.client.CloseIdleConnections()
	closeReceivers(l.rs)
	return nil
}

// webhookOurs is our webhook dispatcher (webhook/dispatch): each message
// an event stored in its durable outbox (SQLite, WAL, synchronous=FULL:
// an fsync per event), then delivered by the dispatcher with its
// defaults (4 attempts in flight per endpoint), one endpoint per
// subscriber. Send returns once the event is stored.
type webhookOurs struct{}

func (webhookOurs) Name() string     { return "webhook" }
func (webhookOurs) Baseline() string { return "http-loop" }
func (webhookOurs) Peer() string     { return "" }
func (webhookOurs) Can(o Options) error {
	return webhookCan(o, "no switch: the outbox always fsyncs each event")
}

type webhookLink struct {
	rs   []*receiver
	st   store.Store
	d    *dispatch.Dispatcher
	dir  string
	stop context.CancelFunc
	done chan struct{}
}

func (webhookOurs) Open(ctx context.Context, o Options) (Link, error) {
	rs, err := newReceivers(o.Subscribers)
	if err != nil {
		return nil, err
	}
	l := &webhookLink{rs: rs, done: make(chan struct{})}
	if l.dir, err = os.MkdirTemp("", "bench-webhook-"); err != nil {
		closeReceivers(rs)
		return nil, err
	}
	if l.st, err = store.Open(ctx, "sqlite:"+filepath.Join(l.dir, "outbox.db")); err != nil {
		closeReceivers(rs)
		os.RemoveAll(l.dir)
		return nil, err
	}
	now := time.Now()
	for i, r := range rs {
		ep := &store.Endpoint{ID: fmt.Sprintf("ep_%d", i), URL: r.url, Enabled: true,
			Secrets: []store.Secret{{Secret: benchSecret().String()}}, Created: now, Updated: now}
		if err := l.st.CreateEndpoint(ctx, ep); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.d, err = dispatch.New(dispatch.Config{Store: l.st,
		Addresses: webhook.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		l.Close()
		return nil, err
	}
	rctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	go func() { defer close(l.done); _ = l.d.Run(rctx) }()
	return l, nil
}

func (l *webhookLink) Send(p []byte) error {
	ev := dispatch.NewEvent("bench", webhookData(p), "", time.Now())
	if _, err := l.st.InsertEvent(context.Background(), ev); err != nil {
		return err
	}
	l.d.Notify()
	return nil
}

func (l *webhookLink) Flush() error { return nil }
func (l *webhookLink) Subs() []Sub  { return subsOf(l.rs) }

func (l *webhookLink) Close() error {
	if l.stop != nil {
		l.stop()
		<-l.done
	}
	closeReceivers(l.rs)
	err := l.st.Close()
	os.RemoveAll(l.dir)
	return err
}
