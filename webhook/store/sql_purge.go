package store

import (
	"context"
	"database/sql"
	"time"
)

// purgeQuery selects the events Purge deletes: created before ?, the
// oldest first (the events_created index), none with a pending delivery
// (looked up by the deliveries' (event_id, endpoint_id) key), at most ?.
// On PostgreSQL it locks them FOR UPDATE, skipping those another
// transaction holds: among them the events of attempts being recorded
// (a completion takes a key-share lock on its events' rows before it
// writes their deliveries; see lockParents), which a disabled endpoint's
// paused deliveries leave purgeable. A completion coming after finds the
// delivery gone (its lease lost), as it does for DeleteEndpoint.
func purgeQuery(d dialect) string {
	return `SELECT ev.id FROM events ev WHERE ev.created < ?
		AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id AND d.status = 'pending')
		ORDER BY ev.created LIMIT ?` + d.skipLocked
}

func (s *sqlStore) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// (From scratch: a run killed after a deletion had counted its
		// rows, and one run again that found nothing to purge returned
		// them.)
		n = 0
		rows, err := tx.QueryContext(ctx, s.d.rebind(purgeQuery(s.d)), nanos(before), limit)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows)
		if err != nil || len(ids) == 0 {
			return err
		}
		// Checked again now that the events are locked, in a statement
		// of its own (PostgreSQL's READ COMMITTED: a new snapshot): a
		// Resend or Recover that made a delivery of one pending after the
		// select's snapshot, before it was locked, has committed (they lock
		// the event first), and its event is kept.
		if ids, err = s.stillPurgeable(ctx, tx, ids); err != nil || len(ids) == 0 {
			return err
		}
		list := idJSON(ids)
		if s.d.forUpdate != "" {
			// Their deliveries locked first, in id order, as
			// DeleteEndpoint locks an endpoint's: the attempts deleted
			// first and the deliveries in the order the scan came to
			// them, a purge holding one (or its attempts) and waiting
			// for another that a deletion held, waiting for the first,
			// was a deadlock, one killed (40P01).
			if _, err := s.exec(ctx, tx, `SELECT COUNT(*) FROM (SELECT id FROM deliveries WHERE event_id IN `+s.d.idSet+` ORDER BY id`+s.d.forUpdate+`) x`, list); err != nil {
				return err
			}
		}
		for _, q := range []string{
			`DELETE FROM attempts WHERE event_id IN ` + s.d.idSet,
			`DELETE FROM deliveries WHERE event_id IN ` + s.d.idSet,
			`DELETE FROM events WHERE id IN ` + s.d.idSet,
		} {
			deleted, err := s.exec(ctx, tx, q, list)
			if err != nil {
				return err
			}
			n = int(deleted) // (the events, last)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// stillPurgeable returns the events of ids with no pending delivery.
func (s *sqlStore) stillPurgeable(ctx context.Context, tx *sql.Tx, ids []string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, s.d.rebind(`SELECT ev.id FROM events ev WHERE ev.id IN `+s.d.idSet+`
		AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id AND d.status = 'pending')`), idJSON(ids))
	if err != nil {
		return nil, err
	}
	return scanIDs(rows)
}
