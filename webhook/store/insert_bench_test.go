package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// insertEventRowByRow is InsertEvent as it was before the fan-out was
// one statement (sql_fanout.go), kept as the benchmark's baseline: every
// enabled endpoint read and decoded (event types and secrets) at each
// event, and each delivery inserted by a statement of its own.
func insertEventRowByRow(ctx context.Context, s *sqlStore, ev *Event) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, `INSERT INTO events (id, type, payload, idempotency_key, created) VALUES (?, ?, ?, ?, ?)`,
			ev.ID, ev.Type, ev.Payload, nil, nanos(ev.Created)); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+endpointColumns+` FROM endpoints e WHERE e.enabled = 1`)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var e Endpoint
			if err := scanEndpoint(rows, &e); err != nil {
				rows.Close()
				return err
			}
			if e.Accepts(ev.Type) {
				ids = append(ids, e.ID)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		at := nanos(ev.Created)
		for _, id := range ids {
			if _, err := s.exec(ctx, tx, `INSERT INTO deliveries (id, event_id, endpoint_id, status, attempts, next_attempt, lease_owner, lease_until, last_code, created, updated)
				VALUES (?, ?, ?, ?, 0, ?, '', 0, 0, ?, ?)`, NewID("dlv", ev.Created), ev.ID, id, StatusPending, at, at, at); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkInsertEventFanOut: storing one event for 5,000 endpoints
// (4,000 of them accepting its type), the row-by-row baseline and
// InsertEvent in turn at each op, on one store: their times per event
// and the ratio, measured in the same run.
func BenchmarkInsertEventFanOut(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchFanOut(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	})
	b.Run("postgres", func(b *testing.B) {
		benchFanOut(b, pgtest.Start(b, "fsync=off").NewDatabase(b))
	})
}

func benchFanOut(b *testing.B, addr string) {
	const endpoints = 5000
	ctx := context.Background()
	st, err := Open(ctx, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	t0 := time.Unix(1_800_000_000, 0)
	err = s.tx(ctx, func(tx *sql.Tx) error {
		for i := range endpoints {
			types := `[]`
			if i%5 == 4 {
				types = `["user.*"]`
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO endpoints (id, url, description, event_types, secrets, rate_limit, enabled, disabled_reason, failing_since, created, updated)
				VALUES (?, 'http://127.0.0.1:1/', '', ?, '[{"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]', 0, 1, '', 0, ?, ?)`,
				fmt.Sprintf("ep_%05d", i), types, nanos(t0), nanos(t0)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	check := func(id string) {
		if ds, err := s.ListDeliveries(ctx, id); err != nil || len(ds) != endpoints*4/5 {
			b.Fatalf("%s: %d deliveries, %v", id, len(ds), err)
		}
	}
	var before, after time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ev := &Event{ID: fmt.Sprintf("msg_b%d", i), Type: "invoice.paid", Payload: []byte(`{"n":1}`), Created: t0}
		start := time.Now()
		if err := insertEventRowByRow(ctx, s, ev); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		ev = &Event{ID: fmt.Sprintf("msg_a%d", i), Type: "invoice.paid", Payload: []byte(`{"n":1}`), Created: t0}
		if _, err := s.InsertEvent(ctx, ev); err != nil {
			b.Fatal(err)
		}
		before, after = before+mid.Sub(start), after+time.Since(mid)
	}
	b.StopTimer()
	check(fmt.Sprintf("msg_b%d", b.N-1))
	check(fmt.Sprintf("msg_a%d", b.N-1))
	b.ReportMetric(float64(before.Microseconds())/1e3/float64(b.N), "row-by-row-ms/event")
	b.ReportMetric(float64(after.Microseconds())/1e3/float64(b.N), "ms/event")
	b.ReportMetric(float64(before)/float64(after), "x-faster")
}
