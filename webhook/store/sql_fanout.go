package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// An event's deliveries are written in one statement, whatever their
// number, from the enabled endpoints whose filters accept its type. The
// filters, decoded from their JSON once, are kept (sqlStore.fanOut) as
// of a version of the endpoints (the endpoints_version table), which
// every change of an endpoint's filter or state raises in its
// transaction, whichever process makes it; an insert reads the version,
// and the endpoints again only when it changed. (Each event used to
// decode every endpoint's event types and secrets and insert each
// delivery in a statement of its own: at 5,000 endpoints, 5,000 round
// trips to PostgreSQL.)

// fanOut is the enabled endpoints' ids and filters as of a version.
type fanOut struct {
	version   int64
	endpoints []Endpoint // ID and EventTypes only
}

const (
	endpointsVersionQuery = `SELECT version FROM endpoints_version WHERE id = 1`
	// bumpEndpointsQuery raises the version: the last statement of a
	// transaction changing an endpoint (it holds the version's row until
	// it commits, and waits for nothing then).
	bumpEndpointsQuery = `UPDATE endpoints_version SET version = version + 1 WHERE id = 1`
)

// insertDeliveriesQuery inserts pending deliveries (a JSON array of
// {"id", "endpoint"}) of an event to the endpoints still there and
// enabled, on PostgreSQL locked (key share) as their rows are read: an
// endpoint being deleted is waited for and left out, where a foreign-key
// check would fail the insert. Arguments: event id, next attempt,
// created, updated, the JSON.
func insertDeliveriesQuery(d dialect) string {
	lock := ""
	if d.forKeyShare != "" {
		lock = d.forKeyShare + " OF e"
	}
	return `INSERT INTO deliveries (id, event_id, endpoint_id, status, attempts, next_attempt, lease_owner, lease_until, last_code, created, updated)
		SELECT x.id, ?, x.endpoint, 'pending', 0, ?, '', 0, 0, ?, ? FROM ` + d.pairs + ` JOIN endpoints e ON e.id = x.endpoint
		WHERE e.enabled = 1` + lock
}

// newDelivery is one row of insertDeliveriesQuery's JSON.
type newDelivery struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
}

// insertDeliveries inserts ev's deliveries, to the endpoints listed in
// targets or, when none is, to every enabled endpoint accepting its type.
func (s *sqlStore) insertDeliveries(ctx context.Context, tx *sql.Tx, ev *Event, targets []string) error {
	var ids []string
	if len(targets) > 0 {
		seen := make(map[string]bool, len(targets))
		for _, t := range targets {
			if !seen[t] {
				seen[t] = true
				ids = append(ids, t)
			}
		}
	} else {
		f, err := s.fanOut(ctx, tx)
		if err != nil {
			return err
		}
		for i := range f.endpoints {
			if e := &f.endpoints[i]; e.Accepts(ev.Type) {
				ids = append(ids, e.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows := make([]newDelivery, len(ids))
	for i, id := range ids {
		rows[i] = newDelivery{ID: NewID("dlv", ev.Created), Endpoint: id}
	}
	j, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	at := nanos(ev.Created)
	_, err = s.execHot(ctx, tx, insertDeliveriesQuery(s.d), ev.ID, at, at, at, string(j))
	return err
}

// fanOut returns the enabled endpoints' filters as of the endpoints'
// version read in tx: those kept when it is theirs, else read again.
// (Read after the version, they are at least that recent; kept under
// it, they are read again at the next change.)
func (s *sqlStore) fanOut(ctx context.Context, tx *sql.Tx) (*fanOut, error) {
	var version int64
	rows, err := s.queryHot(ctx, tx, endpointsVersionQuery)
	if err != nil {
		return nil, err
	}
	if rows.Next() {
		err = rows.Scan(&version)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return nil, err
	}
	if f := s.endpoints.Load(); f != nil && f.version == version {
		return f, nil
	}
	rows, err = tx.QueryContext(ctx, `SELECT id, event_types FROM endpoints WHERE enabled = 1 ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	f := &fanOut{version: version}
	for rows.Next() {
		var e Endpoint
		var types string
		if err := rows.Scan(&e.ID, &types); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(types), &e.EventTypes); err != nil {
			return nil, fmt.Errorf("store: endpoint %s: event types: %w", e.ID, err)
		}
		f.endpoints = append(f.endpoints, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.endpoints.Store(f)
	return f, nil
}
