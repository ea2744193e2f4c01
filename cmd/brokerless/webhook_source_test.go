package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWebhookServeSourceCrash: with --source logd://…, every record of
// the topic becomes exactly one event, even though the dispatcher is
// SIGKILLed while it reads them and restarted: the records it read again
// found their events stored (idempotency key brokerless:source:topic/partition/offset/hash),
// and every event is delivered. The group's session and rebalance
// timeouts are 20 minutes, past the test's deadline: the restarted
// dispatcher gets the partition at once only because it is the same
// static member (instance named after the SQLite file) taking the killed
// one's place; a new dynamic member would wait for one of them.
func TestWebhookServeSourceCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a dispatcher process reading logd (about 15 s)")
	}
	records := 500
	if raceEnabled {
		records = 200 // pure-Go SQLite is some 50 times slower under -race
	}
	ctx, cancel := context.WithCancel(context.Background())
	logdAddr, _, logdDone := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auto-create")
	defer stopLogd(t, cancel, logdDone)
	var (
		mu      sync.Mutex
		count   = map[string]int{}
		arrived = make(chan string, 2*records)
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(2 * time.Millisecond) // a slow receiver
		mu.Lock()
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
	db := "sqlite:" + filepath.Join(t.TempDir(), "w.db")
	base := []string{"webhook", "serve", "--listen", "127.0.0.1:0", "--db", db, "--allow-private", "127.0.0.0/8", "--timeout", "1s"}
	// The endpoint first, so that every event has a delivery.
	setup := startChild(t, "listening on", base...)
	addr, tok := serveAddrRE.FindStringSubmatch(setup.stderr.String()), serveTokenRE.FindStringSubmatch(setup.stderr.String())
	if addr == nil || tok == nil {
		setup.kill(t)
		t.Fatalf("no address or token in:\n%s", setup.stderr)
	}
	if code, out, stderr := runCLI(t, "", "webhook", "endpoints", "add", "--url", rcv.URL, "--server", addr[1], "--token", tok[1]); code != 0 {
		setup.kill(t)
		t.Fatalf("endpoints add: %d %q %q", code, out, stderr)
	}
	setup.stop(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(logdAddr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Topic: "orders", Value: fmt.Appendf(nil, `{"i":%d}`, i), Headers: []kgo.RecordHeader{{Key: "type", Value: []byte("order.placed")}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	args := append(base, "--source", "logd://"+logdAddr+"/orders?session=20m&rebalance=20m")
	deadline := time.After(5 * time.Minute)
	waitFor := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-arrived:
			case <-deadline:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%d of %d records delivered before the deadline", len(count), records)
			}
		}
	}
	first := startChild(t, "listening on", args...)
	waitFor(100)
	first.kill(t)
	second := startChild(t, "listening on", args...)
	waitFor(records - 100)
	addr = serveAddrRE.FindStringSubmatch(second.stderr.String())
	// Exactly one event per record, each with its own key.
	req, _ := http.NewRequest("GET", addr[1]+"/v1/events?limit=500", nil)
	req.Header.Set("Authorization", "Bearer "+tok[1])
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		second.kill(t)
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			Type           string `json:"type"`
			IdempotencyKey string `json:"idempotency_key"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	second.stop(t)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	keyRE := regexp.MustCompile(`^brokerless:source:orders/0/\d+/[0-9a-f]{16}$`)
	for _, e := range list.Data {
		if e.Type != "order.placed" || !keyRE.MatchString(e.IdempotencyKey) || keys[e.IdempotencyKey] {
			t.Errorf("event %+v", e)
		}
		keys[e.IdempotencyKey] = true
	}
	if len(list.Data) != records {
		t.Fatalf("%d events for %d records", len(list.Data), records)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(count) != records {
		t.Fatalf("%d events delivered, want %d", len(count), records)
	}
	m := regexp.MustCompile(`\d+ records read, \d+ events from them, \d+ already stored`).FindString(second.stderr.String())
	if m == "" {
		t.Errorf("no source counts at exit:\n%s", second.stderr)
	}
	t.Logf("after the restart: %s", m)
}
