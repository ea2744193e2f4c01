package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/latency"
	"github.com/brokerless/brokerless/webhook"
	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// benchEvents is how many events a throughput round delivers
// (BROKERLESS_WEBHOOK_EVENTS).
func benchEvents() int {
	if n, err := strconv.Atoi(os.Getenv("BROKERLESS_WEBHOOK_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// fastReceiver answers 204 at once and signals each request on got.
func fastReceiver(b *testing.B, got chan<- struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		got <- struct{}{}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// run is how long a throughput run took and the CPU time the process
// used meanwhile (receiver included), and the PostgreSQL server's.
type benchRun struct{ el, cpu, server time.Duration }

// rate is deliveries per second.
func (r benchRun) rate(n int) float64 { return float64(n) / r.el.Seconds() }

// plainLoop POSTs n signed bodies of the dispatcher's size one after the
// other with a plain http.Client: the baseline.
func plainLoop(b *testing.B, url string, n int, got <-chan struct{}) benchRun {
	sec, _ := webhook.NewSecret(bytes.NewReader(bytes.Repeat([]byte{7}, 32)))
	ev := NewEvent("bench", json.RawMessage(`{"n":1}`), "", time.Now())
	c := &http.Client{}
	defer c.CloseIdleConnections()
	start, cpu := time.Now(), latency.ProcessCPU()
	for range n {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(ev.Payload))
		req.Header.Set("Content-Type", "application/json")
		webhook.SetHeaders(req.Header, ev.ID, time.Now(), ev.Payload, sec)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		<-got
	}
	return benchRun{el: time.Since(start), cpu: latency.ProcessCPU() - cpu}
}

// drain fills a fresh store's outbox with n events to one endpoint, then
// runs a dispatcher until all are delivered and returns how long that
// took, and the CPU time used meanwhile by this process and by the
// PostgreSQL server whose postmaster is pg (0: none).
func drain(b *testing.B, s store.Store, url string, n int, got <-chan struct{}, pg int) benchRun {
	ctx := context.Background()
	now := time.Now()
	sec, _ := webhook.NewSecret(bytes.NewReader(bytes.Repeat([]byte{7}, 32)))
	if err := s.CreateEndpoint(ctx, &store.Endpoint{ID: "ep_bench", URL: url, Enabled: true, Secrets: []store.Secret{{Secret: sec.String()}}, Created: now, Updated: now}); err != nil {
		b.Fatal(err)
	}
	for range n {
		if _, err := s.InsertEvent(ctx, NewEvent("bench", json.RawMessage(`{"n":1}`), "", now)); err != nil {
			b.Fatal(err)
		}
	}
	d, err := New(Config{Store: s, Addresses: loopback})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start, cpu, server := time.Now(), latency.ProcessCPU(), serverCPU(pg)
	go func() { d.Run(runCtx); close(done) }()
	for range n {
		<-got
	}
	r := benchRun{time.Since(start), latency.ProcessCPU() - cpu, serverCPU(pg) - server}
	cancel()
	<-done
	return r
}

func sqliteBench(b *testing.B) store.Store {
	s, err := store.Open(context.Background(), "sqlite:"+b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkThroughput: deliveries per second from a full durable outbox
// (SQLite, synchronous=FULL for events; PostgreSQL, a throwaway cluster
// with fsync on) to a fast local receiver, against a plain loop of signed
// http.Client POSTs to the same receiver. Each round runs the loop, the
// SQLite outbox, the loop, the PostgreSQL outbox and the loop; an
// outbox's ratio is its rate over the faster of the loops just before and
// after it (the machine's load changes within seconds, and the loop after
// PostgreSQL's drain runs beside its background writes). Reported: the
// median ratio over the rounds, and the CPU time per delivery of each
// (this process's, receiver included), and the PostgreSQL server's CPU
// time per delivery (Linux only: its processes' times in /proc).
// One endpoint, the default Config.
func BenchmarkThroughput(b *testing.B) {
	n := benchEvents()
	got := make(chan struct{}, 1<<16)
	srv := fastReceiver(b, got)
	cluster := pgtest.Start(b)
	var liteRatios, pgRatios, loopCPU, liteCPU, pgCPU, pgServer []float64
	us := func(r benchRun) float64 { return float64(r.cpu.Microseconds()) / float64(n) }
	serverUS := func(r benchRun) float64 { return float64(r.server.Microseconds()) / float64(n) }
	for i := 0; i < b.N; i++ {
		loop1 := plainLoop(b, srv.URL, n, got)
		lite := drain(b, sqliteBench(b), srv.URL, n, got, 0)
		loop2 := plainLoop(b, srv.URL, n, got)
		ps, err := store.Open(context.Background(), cluster.NewDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		pg := drain(b, ps, srv.URL, n, got, cluster.PID(b))
		ps.Close()
		loop3 := plainLoop(b, srv.URL, n, got)
		lr := lite.rate(n) / max(loop1.rate(n), loop2.rate(n))
		pr := pg.rate(n) / max(loop2.rate(n), loop3.rate(n))
		b.Logf("round %d: plain loop %.0f, %.0f, %.0f/s (CPU %.0f µs/request); SQLite %.0f/s (ratio %.2f, CPU %.0f µs/delivery); PostgreSQL %.0f/s (ratio %.2f, CPU %.0f µs/delivery, server %.0f µs/delivery)",
			i+1, loop1.rate(n), loop2.rate(n), loop3.rate(n), us(loop2), lite.rate(n), lr, us(lite), pg.rate(n), pr, us(pg), serverUS(pg))
		liteRatios, pgRatios = append(liteRatios, lr), append(pgRatios, pr)
		loopCPU, liteCPU, pgCPU = append(loopCPU, us(loop1), us(loop2), us(loop3)), append(liteCPU, us(lite)), append(pgCPU, us(pg))
		pgServer = append(pgServer, serverUS(pg))
	}
	b.ReportMetric(median(liteRatios), "sqlite-ratio")
	b.ReportMetric(median(pgRatios), "postgres-ratio")
	b.ReportMetric(median(loopCPU), "loop-cpu-µs/op")
	b.ReportMetric(median(liteCPU), "sqlite-cpu-µs/op")
	b.ReportMetric(median(pgCPU), "postgres-cpu-µs/op")
	b.ReportMetric(median(pgServer), "postgres-server-cpu-µs/op")
	b.Logf("ratio to the plain loop, median [min–max] over %d rounds: SQLite %.2f [%.2f–%.2f], PostgreSQL %.2f [%.2f–%.2f]; CPU per delivery (median): loop %.0f µs, SQLite %.0f µs, PostgreSQL %.0f µs (and its server's %.0f µs [%.0f–%.0f])",
		len(liteRatios), median(liteRatios), slices.Min(liteRatios), slices.Max(liteRatios), median(pgRatios), slices.Min(pgRatios), slices.Max(pgRatios),
		median(loopCPU), median(liteCPU), median(pgCPU), median(pgServer), slices.Min(pgServer), slices.Max(pgServer))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchRate is the events per second of a latency run
// (BROKERLESS_WEBHOOK_RATE), held for benchSeconds
// (BROKERLESS_WEBHOOK_SECONDS).
func benchRate() (int, time.Duration) {
	rate, secs := 200, 5
	if n, err := strconv.Atoi(os.Getenv("BROKERLESS_WEBHOOK_RATE")); err == nil && n > 0 {
		rate = n
	}
	if n, err := strconv.Atoi(os.Getenv("BROKERLESS_WEBHOOK_SECONDS")); err == nil && n > 0 {
		secs = n
	}
	return rate, time.Duration(secs) * time.Second
}

// stamped is the data of a latency run's event: when it was due to be
// stored, in Unix nanoseconds.
type stamped struct {
	Data struct {
		T int64 `json:"t"`
	} `json:"data"`
}

// latencyReceiver answers 204 and sends each event's enqueue→delivered
// latency on lat.
func latencyReceiver(b *testing.B, lat chan<- time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev stamped
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			b.Error(err)
		}
		w.WriteHeader(http.StatusNoContent)
		lat <- time.Duration(time.Now().UnixNano() - ev.Data.T)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// paced calls send(i, due) for i in [0, rate×dur) at its due time, open
// loop: a late call keeps its due time, so a stall shows in the latencies.
func paced(rate int, dur time.Duration, send func(i int, due time.Time)) int {
	n := rate * int(dur/time.Second)
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
		if w := time.Until(due); w > 0 {
			time.Sleep(w) // pacing the open-loop producer
		}
		send(i, due)
	}
	return n
}

// latencyOutbox stores events at a fixed rate in s while a dispatcher
// delivers them, and returns the enqueue→delivered latencies. With hang,
// every event also goes to a second endpoint that never answers (each
// attempt to it ends at the 2 s timeout).
func latencyOutbox(b *testing.B, s store.Store, rate int, dur time.Duration, hang bool) []time.Duration {
	ctx := context.Background()
	lat := make(chan time.Duration, rate*int(dur/time.Second)+16)
	srv := latencyReceiver(b, lat)
	now := time.Now()
	sec, _ := webhook.NewSecret(bytes.NewReader(bytes.Repeat([]byte{7}, 32)))
	if err := s.CreateEndpoint(ctx, &store.Endpoint{ID: "ep_lat", URL: srv.URL, Enabled: true, Secrets: []store.Secret{{Secret: sec.String()}}, Created: now, Updated: now}); err != nil {
		b.Fatal(err)
	}
	if hang {
		stop := make(chan struct{})
		hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}))
		defer hung.Close()
		defer close(stop)
		if err := s.CreateEndpoint(ctx, &store.Endpoint{ID: "ep_hang", URL: hung.URL, Enabled: true, Secrets: []store.Secret{{Secret: sec.String()}}, Created: now, Updated: now}); err != nil {
			b.Fatal(err)
		}
	}
	d, err := New(Config{Store: s, Addresses: loopback, Timeout: 2 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(runCtx); close(done) }()
	n := paced(rate, dur, func(_ int, due time.Time) {
		ev := NewEvent("bench", json.RawMessage(fmt.Sprintf(`{"t":%d}`, due.UnixNano())), "", time.Now())
		if _, err := s.InsertEvent(ctx, ev); err != nil {
			b.Error(err)
		}
		d.Notify()
	})
	out := collect(lat, n)
	cancel()
	<-done
	return out
}

// latencyDirect POSTs the same events at the same rate straight from a
// plain http.Client, one goroutine per event (no queue): the baseline.
func latencyDirect(b *testing.B, rate int, dur time.Duration) []time.Duration {
	lat := make(chan time.Duration, rate*int(dur/time.Second)+16)
	srv := latencyReceiver(b, lat)
	sec, _ := webhook.NewSecret(bytes.NewReader(bytes.Repeat([]byte{7}, 32)))
	c := &http.Client{}
	defer c.CloseIdleConnections()
	n := paced(rate, dur, func(_ int, due time.Time) {
		ev := NewEvent("bench", json.RawMessage(fmt.Sprintf(`{"t":%d}`, due.UnixNano())), "", time.Now())
		go func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(ev.Payload))
			webhook.SetHeaders(req.Header, ev.ID, time.Now(), ev.Payload, sec)
			resp, err := c.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
		}()
	})
	return collect(lat, n)
}

func collect(lat <-chan time.Duration, n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	timeout := time.After(2 * time.Minute)
	for range n {
		select {
		case l := <-lat:
			out = append(out, l)
		case <-timeout:
			return out
		}
	}
	return out
}

func quantile(v []time.Duration, q float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkLatency: enqueue→delivered latency, p50 and p99, at a fixed
// rate (open loop) through the durable outbox on SQLite and on
// PostgreSQL (a throwaway cluster, fsync on), and for a direct POST of
// the same events; one round of each per iteration, interleaved.
func BenchmarkLatency(b *testing.B) {
	rate, dur := benchRate()
	cluster := pgtest.Start(b)
	var direct, lite, pg []time.Duration
	for i := 0; i < b.N; i++ {
		direct = append(direct, latencyDirect(b, rate, dur)...)
		lite = append(lite, latencyOutbox(b, sqliteBench(b), rate, dur, false)...)
		ps, err := store.Open(context.Background(), cluster.NewDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		pg = append(pg, latencyOutbox(b, ps, rate, dur, false)...)
		ps.Close()
	}
	for _, r := range []struct {
		name string
		v    []time.Duration
	}{{"direct", direct}, {"sqlite", lite}, {"postgres", pg}} {
		b.ReportMetric(float64(quantile(r.v, 0.5).Microseconds())/1000, r.name+"-p50-ms")
		b.ReportMetric(float64(quantile(r.v, 0.99).Microseconds())/1000, r.name+"-p99-ms")
		b.Logf("%s: %d events at %d/s, p50 %v p99 %v", r.name, len(r.v), rate, quantile(r.v, 0.5), quantile(r.v, 0.99))
	}
}

// BenchmarkIsolation: the enqueue→delivered latency of a fast endpoint
// alone, and beside an endpoint that hangs until the timeout (every event
// goes to both), in interleaved rounds on SQLite at a fixed rate (open
// loop); p99-ratio is the median over the rounds of the p99 beside the
// hanging endpoint over the p99 alone (the target is at most 2).
func BenchmarkIsolation(b *testing.B) {
	rate, dur := benchRate()
	var (
		solo, beside []time.Duration
		ratios       []float64
	)
	for i := 0; i < b.N; i++ {
		s := latencyOutbox(b, sqliteBench(b), rate, dur, false)
		h := latencyOutbox(b, sqliteBench(b), rate, dur, true)
		r := float64(quantile(h, 0.99)) / float64(quantile(s, 0.99))
		b.Logf("round %d: p99 alone %v, beside the hanging endpoint %v: ratio %.2f", i+1, quantile(s, 0.99), quantile(h, 0.99), r)
		solo, beside, ratios = append(solo, s...), append(beside, h...), append(ratios, r)
	}
	for _, r := range []struct {
		name string
		v    []time.Duration
	}{{"solo", solo}, {"beside-hang", beside}} {
		b.ReportMetric(float64(quantile(r.v, 0.5).Microseconds())/1000, r.name+"-p50-ms")
		b.ReportMetric(float64(quantile(r.v, 0.99).Microseconds())/1000, r.name+"-p99-ms")
		b.Logf("%s: %d events at %d/s, p50 %v p99 %v", r.name, len(r.v), rate, quantile(r.v, 0.5), quantile(r.v, 0.99))
	}
	b.ReportMetric(median(ratios), "p99-ratio")
}
