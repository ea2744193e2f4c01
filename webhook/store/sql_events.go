package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

func (s *sqlStore) InsertEvent(ctx context.Context, ev *Event, targets ...string) (bool, error) {
	created := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		created, err = s.insertEvent(ctx, tx, ev, targets)
		return err
	})
	return created, err
}

// insertEvent is InsertEvent inside tx.
func (s *sqlStore) insertEvent(ctx context.Context, tx *sql.Tx, ev *Event, targets []string) (bool, error) {
	var key any
	if ev.IdempotencyKey != "" {
		key = ev.IdempotencyKey
	}
	n, err := s.exec(ctx, tx, `INSERT INTO events (id, type, payload, idempotency_key, created) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (idempotency_key) DO NOTHING`, ev.ID, ev.Type, ev.Payload, key, nanos(ev.Created))
	if err != nil {
		return false, err
	}
	if n == 0 {
		row := tx.QueryRowContext(ctx, s.d.rebind(`SELECT id, type, payload, idempotency_key, created FROM events WHERE idempotency_key = ?`), ev.IdempotencyKey)
		return false, scanEvent(row, ev)
	}
	if err := s.insertDeliveries(ctx, tx, ev, targets); err != nil {
		return false, err
	}
	return true, nil
}

func scanEvent(r scanner, ev *Event) error {
	var (
		key     sql.NullString
		created int64
	)
	if err := r.Scan(&ev.ID, &ev.Type, &ev.Payload, &key, &created); err != nil {
		return err
	}
	ev.IdempotencyKey, ev.Created = key.String, fromNanos(created)
	return nil
}

func (s *sqlStore) GetEvent(ctx context.Context, id string) (*Event, error) {
	ev := new(Event)
	err := scanEvent(s.db.QueryRowContext(ctx, s.d.rebind(`SELECT id, type, payload, idempotency_key, created FROM events WHERE id = ?`), id), ev)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: event %s", ErrNotFound, id)
	}
	return ev, err
}

// ListEvents pages by (created, id): by created alone, the events of a
// page's last creation time that did not fit on it were on no page
// (created is to the millisecond, and a burst stores many in one).
func (s *sqlStore) ListEvents(ctx context.Context, before time.Time, beforeID string, limit int) ([]*Event, error) {
	b := nanos(before)
	if before.IsZero() {
		b, beforeID = 1<<63-1, ""
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT id, type, payload, idempotency_key, created FROM events
		WHERE created <= ? AND (created < ? OR id < ?) ORDER BY created DESC, id DESC LIMIT ?`), b, b, beforeID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*Event
	for rows.Next() {
		ev := new(Event)
		if err := scanEvent(rows, ev); err != nil {
			return nil, err
		}
		list = append(list, ev)
	}
	return list, rows.Err()
}

const deliveryColumns = `d.id, d.event_id, d.endpoint_id, d.status, d.attempts, d.next_attempt, d.last_code, d.created, d.updated`

func scanDelivery(r scanner, d *Delivery) error {
	var next, created, updated int64
	if err := r.Scan(&d.ID, &d.EventID, &d.EndpointID, &d.Status, &d.Attempts, &next, &d.LastCode, &created, &updated); err != nil {
		return err
	}
	d.NextAttempt, d.Created, d.Updated = fromNanos(next), fromNanos(created), fromNanos(updated)
	return nil
}

func (s *sqlStore) ListDeliveries(ctx context.Context, eventID string) ([]*Delivery, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT `+deliveryColumns+` FROM deliveries d WHERE d.event_id = ? ORDER BY d.endpoint_id`), eventID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*Delivery
	for rows.Next() {
		d := new(Delivery)
		if err := scanDelivery(rows, d); err != nil {
			return nil, err
		}
		list = append(list, d)
	}
	return list, rows.Err()
}

func (s *sqlStore) ListAttempts(ctx context.Context, eventID string) ([]*Attempt, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT id, delivery_id, event_id, endpoint_id, started, duration, status_code, error, response, outcome
		FROM attempts WHERE event_id = ? ORDER BY started, id`), eventID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*Attempt
	for rows.Next() {
		a := new(Attempt)
		var started, duration int64
		if err := rows.Scan(&a.ID, &a.DeliveryID, &a.EventID, &a.EndpointID, &started, &duration, &a.StatusCode, &a.Error, &a.Response, &a.Outcome); err != nil {
			return nil, err
		}
		a.Started, a.Duration = fromNanos(started), time.Duration(duration)
		list = append(list, a)
	}
	return list, rows.Err()
}

// Resend of a delivery leased, whose attempt may be under way, keeps the
// lease and sets its resend: the attempt's completion then leaves it
// pending (see completeDeliveryQuery). Its resend is now by the leases'
// clock, the server's on PostgreSQL (see Completion.LeaseStarted).
func (s *sqlStore) Resend(ctx context.Context, eventID, endpointID string, now time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// The event's row is locked (key share) for the transaction: a
		// purge holding it (FOR UPDATE) is waited for, and the event is
		// then gone; a purge not yet holding it skips it (SKIP LOCKED), and
		// after the commit finds its delivery pending (see Purge).
		var one int
		if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT 1 FROM events WHERE id = ?`+s.d.forKeyShare), eventID).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: event %s", ErrNotFound, eventID)
			}
			return err
		}
		t := nanos(now)
		// A resend is by the leases' clock (Completion.LeaseStarted).
		resend, at := "CAST(? AS BIGINT)", []any{t}
		if s.leaseByDB {
			resend, at = s.d.dbNow, nil
		}
		var err error
		if endpointID == "" {
			if s.d.forUpdate != "" {
				// Locked first in id order, as Release locks them: the
				// UPDATE locked them in the order it came to them, and a
				// release of several of them, holding one and waiting
				// for another held here, waiting for the first, was a
				// deadlock, one killed (40P01).
				if _, err := s.exec(ctx, tx, `SELECT COUNT(*) FROM (SELECT id FROM deliveries WHERE event_id = ? ORDER BY id`+s.d.forUpdate+`) x`, eventID); err != nil {
					return err
				}
			}
			n, err = s.exec(ctx, tx, `UPDATE deliveries SET status = ?, attempts = 0, next_attempt = ?, updated = ?,
				resend = CASE WHEN lease_owner <> '' THEN `+resend+` ELSE 0 END WHERE event_id = ?`,
				append(append([]any{StatusPending, t, t}, at...), eventID)...)
			return err
		}
		if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT 1 FROM endpoints WHERE id = ?`), endpointID).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: endpoint %s", ErrNotFound, endpointID)
			}
			return err
		}
		n, err = s.exec(ctx, tx, `INSERT INTO deliveries (id, event_id, endpoint_id, status, attempts, next_attempt, lease_owner, lease_until, last_code, created, updated)
			VALUES (?, ?, ?, ?, 0, ?, '', 0, 0, ?, ?)
			ON CONFLICT (event_id, endpoint_id) DO UPDATE SET status = excluded.status, attempts = 0, next_attempt = excluded.next_attempt, updated = excluded.updated,
				resend = CASE WHEN deliveries.lease_owner <> '' THEN `+resend+` ELSE 0 END`,
			append([]any{NewID("dlv", now), eventID, endpointID, StatusPending, t, t, t}, at...)...)
		return err
	})
	return int(n), err
}

// Recover locks (key share) the events of the deliveries it makes
// pending, as Resend does, against a purge deleting them meanwhile. The
// deliveries in the window whose attempts are under way (pending and
// leased) get its time in recover_at: an attempt that then fails for
// good leaves its delivery pending, due at that time (see
// completeDeliveryQuery); without it, an attempt failing just after the
// Recover left its delivery failed, though the Recover was asked for
// the failures of that window. On PostgreSQL it first locks the
// endpoint's row FOR UPDATE, as UpdateEndpoint does, and for the same
// reason: marking those deliveries, it would otherwise deadlock (40P01)
// with an update or a completion disabling the endpoint, pausing the
// same deliveries in another order.
func (s *sqlStore) Recover(ctx context.Context, endpointID string, since, until, now time.Time) (int, error) {
	t := nanos(now)
	lock := ""
	if s.d.forKeyShare != "" {
		lock = s.d.forKeyShare + " OF ev"
	}
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.d.forUpdate != "" {
			// (No row is no error: an endpoint unknown has nothing to recover.)
			if _, err := s.exec(ctx, tx, `SELECT id FROM endpoints WHERE id = ?`+s.d.forUpdate, endpointID); err != nil {
				return err
			}
		}
		var err error
		n, err = s.exec(ctx, tx, `UPDATE deliveries SET status = ?, attempts = 0, next_attempt = ?, updated = ?
			WHERE endpoint_id = ? AND status = ? AND event_id IN (SELECT ev.id FROM deliveries x JOIN events ev ON ev.id = x.event_id
				WHERE x.endpoint_id = ? AND x.status = ? AND ev.created >= ? AND ev.created < ?`+lock+`)`,
			StatusPending, t, t, endpointID, StatusFailed, endpointID, StatusFailed, since.UnixNano(), until.UnixNano())
		if err != nil {
			return err
		}
		leased := `endpoint_id = ? AND status = ? AND lease_owner <> '' AND event_id IN (SELECT ev.id FROM deliveries x JOIN events ev ON ev.id = x.event_id
				WHERE x.endpoint_id = ? AND x.status = ? AND x.lease_owner <> '' AND ev.created >= ? AND ev.created < ?)`
		args := []any{endpointID, StatusPending, endpointID, StatusPending, since.UnixNano(), until.UnixNano()}
		if s.d.forUpdate != "" {
			// Locked first in id order, as Release locks them: the
			// UPDATE locked them in the order it came to them, and a
			// release of several of them, holding one and waiting for
			// another held here, waiting for the first, was a deadlock,
			// one killed (40P01).
			if _, err := s.exec(ctx, tx, `SELECT COUNT(*) FROM (SELECT id FROM deliveries WHERE `+leased+` ORDER BY id`+s.d.forUpdate+`) y`, args...); err != nil {
				return err
			}
		}
		_, err = s.exec(ctx, tx, `UPDATE deliveries SET recover_at = ? WHERE `+leased, append([]any{t}, args...)...)
		return err
	})
	return int(n), err
}
