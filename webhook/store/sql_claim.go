package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// scanWindow × the claim's limit is how many of the earliest due
// deliveries a claim considers.
const scanWindow = 4

func (s *sqlStore) Claim(ctx context.Context, r ClaimRequest) ([]*Job, error) {
	if r.Limit <= 0 {
		return nil, nil
	}
	per := r.PerEndpoint
	if per <= 0 {
		per = r.Limit
	}
	now, until := nanos(r.Now), nanos(r.Now.Add(r.Lease))
	skip := ""
	args := []any{now, now}
	if len(r.Skip) > 0 {
		skip = ` AND d.endpoint_id NOT IN (` + placeholders(len(r.Skip)) + `)`
		for _, id := range r.Skip {
			args = append(args, id)
		}
	}
	// The candidates are the earliest due deliveries (a window of
	// scanWindow×Limit, read in index order), at most per of them for each
	// endpoint; locked re-reads them with row locks (PostgreSQL), skipping
	// rows another dispatcher is claiming and re-checking that each is
	// still free once locked.
	args = append(args, scanWindow*r.Limit, per, r.Limit, now, now, r.Owner, until)
	query := `WITH candidates AS (
			SELECT id FROM (
				SELECT id, next_attempt, ROW_NUMBER() OVER (PARTITION BY endpoint_id ORDER BY next_attempt, id) AS rank FROM (
					SELECT d.id, d.endpoint_id, d.next_attempt FROM deliveries d
					WHERE d.status = 'pending' AND d.next_attempt <= ? AND d.lease_until <= ?` + skip + `
						AND d.endpoint_id IN (SELECT id FROM endpoints WHERE enabled = 1)
					ORDER BY d.next_attempt, d.id LIMIT ?
				) due
			) ranked WHERE rank <= ? ORDER BY next_attempt, id LIMIT ?
		), locked AS (
			SELECT id FROM deliveries WHERE id IN (SELECT id FROM candidates)
				AND status = 'pending' AND next_attempt <= ? AND lease_until <= ?` + s.d.lock + `
		)
		UPDATE deliveries SET lease_owner = ?, lease_until = ? WHERE id IN (SELECT id FROM locked) RETURNING id`
	var jobs []*Job
	err := s.relaxedTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.d.rebind(query), args...)
		if err != nil {
			return err
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		rows, err = tx.QueryContext(ctx, s.d.rebind(`SELECT `+deliveryColumns+`, ev.id, ev.type, ev.payload, ev.idempotency_key, ev.created, `+endpointColumns+`
			FROM deliveries d JOIN events ev ON ev.id = d.event_id JOIN endpoints e ON e.id = d.endpoint_id
			WHERE d.id IN (`+placeholders(len(ids))+`) ORDER BY d.next_attempt, d.id`), ids...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j := new(Job)
			var (
				key     sql.NullString
				created int64
			)
			evDest := []any{&j.Event.ID, &j.Event.Type, &j.Event.Payload, &key, &created}
			var (
				types, secrets                     string
				enabled                            int
				failingSince, epCreated, epUpdated int64
				next, dCreated, dUpdated           int64
			)
			e := &j.Endpoint
			d := &j.Delivery
			dest := []any{&d.ID, &d.EventID, &d.EndpointID, &d.Status, &d.Attempts, &next, &d.LastCode, &dCreated, &dUpdated}
			dest = append(dest, evDest...)
			dest = append(dest, &e.ID, &e.URL, &e.Description, &types, &secrets, &e.RateLimit, &enabled, &e.DisabledReason, &failingSince, &epCreated, &epUpdated)
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			d.NextAttempt, d.Created, d.Updated = fromNanos(next), fromNanos(dCreated), fromNanos(dUpdated)
			j.Event.IdempotencyKey, j.Event.Created = key.String, fromNanos(created)
			if err := decodeEndpoint(e, types, secrets, enabled, failingSince, epCreated, epUpdated); err != nil {
				return err
			}
			jobs = append(jobs, j)
		}
		return rows.Err()
	})
	return jobs, err
}

func (s *sqlStore) Release(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	args := []any{owner}
	for _, id := range ids {
		args = append(args, id)
	}
	return s.relaxedTx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `UPDATE deliveries SET lease_owner = '', lease_until = 0 WHERE lease_owner = ? AND id IN (`+placeholders(len(ids))+`)`, args...)
		return err
	})
}

func (s *sqlStore) Complete(ctx context.Context, cs ...*Completion) error {
	lost := 0
	err := s.relaxedTx(ctx, func(tx *sql.Tx) error {
		lost = 0
		for _, c := range cs {
			ok, err := s.complete(ctx, tx, c)
			if err != nil {
				return err
			}
			c.LeaseLost = !ok
			if !ok {
				lost++
			}
		}
		return nil
	})
	if err == nil && lost > 0 {
		err = fmt.Errorf("%w: %d of %d completions", ErrLeaseLost, lost, len(cs))
	}
	return err
}

// relaxedTx is tx with commit durability relaxed (see Complete).
func (s *sqlStore) relaxedTx(ctx context.Context, f func(*sql.Tx) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.d.relax != "" {
		if _, err := conn.ExecContext(ctx, s.d.relax); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), s.d.unrelax)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if s.d.relaxLocal != "" {
		if _, err := tx.ExecContext(ctx, s.d.relaxLocal); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// complete records one completion in tx; false if the lease was lost.
func (s *sqlStore) complete(ctx context.Context, tx *sql.Tx, c *Completion) (bool, error) {
	a := &c.Attempt
	n, err := s.exec(ctx, tx, `UPDATE deliveries SET status = ?, attempts = attempts + 1, next_attempt = ?, lease_owner = '', lease_until = 0,
		last_code = ?, updated = ? WHERE id = ? AND lease_owner = ?`,
		c.Status, nanos(c.NextAttempt), a.StatusCode, nanos(a.Started.Add(a.Duration)), a.DeliveryID, c.Owner)
	if err != nil || n == 0 {
		return false, err
	}
	response := a.Response
	if response == nil {
		response = []byte{}
	}
	if _, err := s.exec(ctx, tx, `INSERT INTO attempts (id, delivery_id, event_id, endpoint_id, started, duration, status_code, error, response, outcome)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.DeliveryID, a.EventID, a.EndpointID, nanos(a.Started), int64(a.Duration), a.StatusCode, a.Error, response, c.Status); err != nil {
		return false, err
	}
	if c.EndpointOK {
		_, err = s.exec(ctx, tx, `UPDATE endpoints SET failing_since = 0 WHERE id = ? AND failing_since <> 0`, a.EndpointID)
	} else {
		_, err = s.exec(ctx, tx, `UPDATE endpoints SET failing_since = ? WHERE id = ? AND failing_since = 0`, nanos(a.Started), a.EndpointID)
	}
	if err != nil {
		return false, err
	}
	if c.Disable != "" {
		if _, err := s.exec(ctx, tx, `UPDATE endpoints SET enabled = 0, disabled_reason = ?, updated = ? WHERE id = ?`,
			c.Disable, nanos(a.Started.Add(a.Duration)), a.EndpointID); err != nil {
			return false, err
		}
		if _, err := s.exec(ctx, tx, `UPDATE deliveries SET status = ? WHERE endpoint_id = ? AND status = ?`,
			StatusPaused, a.EndpointID, StatusPending); err != nil {
			return false, err
		}
	}
	for _, ev := range c.Notices {
		if _, err := s.insertEvent(ctx, tx, ev, []string{c.NoticeEndpoint}); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (s *sqlStore) NextDue(ctx context.Context) (time.Time, bool, error) {
	var t sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MIN(CASE WHEN d.lease_until > d.next_attempt THEN d.lease_until ELSE d.next_attempt END)
		FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id WHERE d.status = 'pending' AND e.enabled = 1`).Scan(&t)
	if err != nil || !t.Valid {
		return time.Time{}, false, err
	}
	return time.Unix(0, t.Int64), true, nil
}
