package source

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// fakeLog is a subscriber replaying events, then blocking until ctx is
// done; Ack checks the acknowledged record's event is already stored.
type fakeLog struct {
	t      *testing.T
	st     store.Store
	events []transport.Event
	acked  chan uint64
	// ackUnstored are offsets expected acknowledged with no event (bad records).
	ackUnstored map[uint64]bool
}

func (f *fakeLog) Receive(ctx context.Context) (transport.Event, error) {
	if len(f.events) == 0 {
		<-ctx.Done()
		return transport.Event{}, ctx.Err()
	}
	ev := f.events[0]
	f.events = f.events[1:]
	return ev, nil
}

func (f *fakeLog) Semantics() transport.Semantics { return transport.AtLeastOnce }
func (f *fakeLog) Close() error                   { return nil }

func (f *fakeLog) Ack(ctx context.Context, s transport.StreamID, seq uint64) error {
	evs, err := f.st.ListEvents(ctx, time.Time{}, "", 100)
	if err != nil {
		return err
	}
	found := false
	for _, ev := range evs {
		found = found || recordOf(ev.IdempotencyKey) == s.Topic+"/0/"+string(rune('0'+seq))
	}
	if !found && !f.ackUnstored[seq] {
		f.t.Errorf("offset %d acknowledged before its event was stored", seq)
	}
	f.acked <- seq
	return nil
}

// recordOf is "TOPIC/PARTITION/OFFSET" of a source event's key, "" for
// another key.
func recordOf(key string) string {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	i := strings.LastIndexByte(rest, '/')
	if !ok || i < 0 || len(rest)-i-1 != 16 {
		return ""
	}
	return rest[:i]
}

func record(seq uint64, payload string, headers ...transport.Header) transport.Event {
	return transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: transport.StreamID{Topic: "orders", Partition: 0}, Seq: seq, Payload: []byte(payload), Headers: headers}}
}

// TestRun: each record becomes one event (type from its header or the
// default, JSON data kept, other payloads as a JSON string, key
// brokerless:source:topic/partition/offset/hash), acknowledged after the event is stored; a
// record read again stores nothing new; gaps are counted.
func TestRun(t *testing.T) {
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &fakeLog{t: t, st: st, acked: make(chan uint64, 10), events: []transport.Event{
		record(1, `{"id":1}`, transport.Header{Key: "type", Value: []byte("order.placed")}),
		record(2, `not json`),
		{Kind: transport.EventGap, Gap: transport.Gap{Stream: transport.StreamID{Topic: "orders"}, From: 3, To: 4, Reason: transport.GapUnrecoverable}},
		record(5, `{"id":5}`),
		record(5, `{"id":5}`), // read again after a crash
	}}
	var stats Stats
	notified := 0
	acked := run(t, f, Config{Subscriber: f, Store: st, Type: "default.type", Stats: &stats, Notify: func() { notified++ }}, 4)
	if want := []uint64{1, 2, 5, 5}; !slices.Equal(acked, want) {
		t.Errorf("acknowledged %v, want %v", acked, want)
	}
	evs, _ := st.ListEvents(context.Background(), time.Time{}, "", 100)
	byKey := map[string]*store.Event{}
	for _, ev := range evs {
		byKey[recordOf(ev.IdempotencyKey)] = ev
	}
	if len(evs) != 3 || byKey["orders/0/1"].Type != "order.placed" || byKey["orders/0/2"].Type != "default.type" {
		t.Fatalf("events %+v", byKey)
	}
	var body struct{ Data json.RawMessage }
	json.Unmarshal(byKey["orders/0/2"].Payload, &body)
	if string(body.Data) != `"not json"` {
		t.Errorf("non-JSON payload stored as %s", body.Data)
	}
	json.Unmarshal(byKey["orders/0/1"].Payload, &body)
	if string(body.Data) != `{"id":1}` {
		t.Errorf("JSON payload stored as %s", body.Data)
	}
	if stats.Events.Load() != 3 || stats.Duplicates.Load() != 1 || stats.Gaps.Load() != 1 || notified != 3 {
		t.Errorf("stats events %d duplicates %d gaps %d, notified %d", stats.Events.Load(), stats.Duplicates.Load(), stats.Gaps.Load(), notified)
	}
}

// run runs Run until n records are acknowledged, and returns their offsets.
func run(t *testing.T, f *fakeLog, cfg Config, n int) []uint64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	var acked []uint64
	deadline := time.After(30 * time.Second)
	for len(acked) < n {
		select {
		case seq := <-f.acked:
			acked = append(acked, seq)
		case err := <-done:
			cancel()
			t.Fatalf("Run ended: %v", err)
		case <-deadline:
			cancel()
			t.Fatalf("acknowledged %v", acked)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return acked
}

func TestRunNeedsAcknowledger(t *testing.T) {
	type onlySub struct{ transport.Subscriber }
	if err := Run(context.Background(), Config{Subscriber: onlySub{}}); !errors.Is(err, ErrNotAcknowledging) {
		t.Fatalf("got %v", err)
	}
}

// TestRunSkipsRecordWithUnstorableType: a record whose type header
// cannot be an event type (not valid UTF-8, a NUL, longer than
// dispatch.MaxTypeLen: headers are bytes) is a bad record: skipped,
// counted and acknowledged, and the records after it are stored.
func TestRunSkipsRecordWithUnstorableType(t *testing.T) {
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	typ := func(v string) transport.Header { return transport.Header{Key: "type", Value: []byte(v)} }
	f := &fakeLog{t: t, st: st, acked: make(chan uint64, 10), events: []transport.Event{
		record(1, `{"id":1}`, typ("order.\xff")),
		record(2, `{"id":2}`, typ("order.\x00")),
		record(3, `{"id":3}`, typ(strings.Repeat("t", dispatch.MaxTypeLen+1))),
		record(4, `{"id":4}`, typ(strings.Repeat("t", dispatch.MaxTypeLen))),
	}}
	f.ackUnstored = map[uint64]bool{1: true, 2: true, 3: true}
	var stats Stats
	acked := run(t, f, Config{Subscriber: f, Store: st, Stats: &stats}, 4)
	if want := []uint64{1, 2, 3, 4}; !slices.Equal(acked, want) {
		t.Errorf("acknowledged %v, want %v", acked, want)
	}
	evs, _ := st.ListEvents(context.Background(), time.Time{}, "", 100)
	if len(evs) != 1 || recordOf(evs[0].IdempotencyKey) != "orders/0/4" {
		t.Errorf("stored %d events, want only record 4's", len(evs))
	}
	if stats.Records.Load() != 4 || stats.Bad.Load() != 3 || stats.Events.Load() != 1 {
		t.Errorf("stats records %d bad %d events %d, want 4 3 1", stats.Records.Load(), stats.Bad.Load(), stats.Events.Load())
	}
}

// TestRunTypeNotUTF8Postgres: PostgreSQL's TEXT column refuses a type
// that is not valid UTF-8; such a record once stopped Run for good (the
// record never acknowledged, read again and refused again on restart).
func TestRunTypeNotUTF8Postgres(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.Start(t, "fsync=off").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &fakeLog{t: t, st: st, acked: make(chan uint64, 10), events: []transport.Event{
		record(1, `{"id":1}`, transport.Header{Key: "type", Value: []byte("order.\xff")}),
		record(2, `{"id":2}`, transport.Header{Key: "type", Value: []byte("order.\x00")}),
		record(3, `{"id":3}`),
	}}
	f.ackUnstored = map[uint64]bool{1: true, 2: true}
	if acked := run(t, f, Config{Subscriber: f, Store: st}, 3); !slices.Equal(acked, []uint64{1, 2, 3}) {
		t.Errorf("acknowledged %v, want [1 2 3]", acked)
	}
}

// TestRunSkipsRecordWithPayloadNotUTF8: a payload that is not valid
// UTF-8, JSON or not, is a bad record (skipped, counted, acknowledged):
// the official Standard Webhooks library hashes the body as a UTF-8
// string, so a delivery of it could never verify there.
func TestRunSkipsRecordWithPayloadNotUTF8(t *testing.T) {
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &fakeLog{t: t, st: st, acked: make(chan uint64, 10), events: []transport.Event{
		record(1, "{\"name\":\"caf\xe9\"}"),
		record(2, "caf\xe9, not JSON"),
		record(3, `{"name":"café"}`),
	}}
	f.ackUnstored = map[uint64]bool{1: true, 2: true}
	var stats Stats
	if acked := run(t, f, Config{Subscriber: f, Store: st, Stats: &stats}, 3); !slices.Equal(acked, []uint64{1, 2, 3}) {
		t.Errorf("acknowledged %v, want [1 2 3]", acked)
	}
	evs, _ := st.ListEvents(context.Background(), time.Time{}, "", 100)
	if len(evs) != 1 || recordOf(evs[0].IdempotencyKey) != "orders/0/3" {
		t.Errorf("stored %d events, want only record 3's", len(evs))
	}
	if stats.Bad.Load() != 2 || stats.Events.Load() != 1 {
		t.Errorf("stats bad %d events %d, want 2 1", stats.Bad.Load(), stats.Events.Load())
	}
	_, err = Event(transport.Message{Stream: transport.StreamID{Topic: "orders"}, Seq: 1, Payload: []byte("{\"name\":\"caf\xe9\"}")}, "t", "type", time.Now())
	if !errors.Is(err, dispatch.ErrBadEvent) {
		t.Errorf("Event of a payload not valid UTF-8: %v, want dispatch.ErrBadEvent", err)
	}
}

// TestRunKeysOutOfClientsReach: an event a client stored with key
// "orders/0/1" (what the source's keys once were) does not make record
// orders/0/1 a duplicate: the source's keys carry the reserved prefix the
// API refuses. A re-created topic (offsets from 0 again) with other data
// at an offset gets its own event; the same record read again does not.
func TestRunKeysOutOfClientsReach(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.InsertEvent(ctx, dispatch.NewEvent("client.event", json.RawMessage(`{}`), "orders/0/1", time.Now())); err != nil {
		t.Fatal(err)
	}
	f := &fakeLog{t: t, st: st, acked: make(chan uint64, 10), events: []transport.Event{
		record(1, `{"order":1}`),
		record(1, `{"order":1}`),       // read again after a crash
		record(1, `{"order":"new-1"}`), // the topic re-created
	}}
	var stats Stats
	run(t, f, Config{Subscriber: f, Store: st, Stats: &stats}, 3)
	evs, _ := st.ListEvents(ctx, time.Time{}, "", 100)
	var keys []string
	for _, ev := range evs {
		if ev.Type == DefaultType {
			if !strings.HasPrefix(ev.IdempotencyKey, dispatch.ReservedKeyPrefix) {
				t.Errorf("key %q outside the reserved prefix", ev.IdempotencyKey)
			}
			keys = append(keys, ev.IdempotencyKey)
		}
	}
	if len(keys) != 2 || stats.Events.Load() != 2 || stats.Duplicates.Load() != 1 {
		t.Errorf("record events %q (stats events %d duplicates %d), want 2 events and 1 duplicate",
			keys, stats.Events.Load(), stats.Duplicates.Load())
	}
}
