package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// sqlStore is Store on database/sql.
type sqlStore struct {
	db *sql.DB
	d  dialect

	// stmts holds the hot statements (hotQueries), prepared once at open
	// on SQLite (query text → statement): the claim and completion paths
	// would otherwise spend much of their time parsing. PostgreSQL needs
	// no such cache: pgx keeps its own per connection.
	stmts map[string]*sql.Stmt

	// endpoints is the enabled endpoints' filters an event's insert
	// reads (see fanOut), nil before the first.
	endpoints atomic.Pointer[fanOut]

	// leaseByDB measures leases by the database's clock (dialect.dbNow),
	// not by the claim's Now: on PostgreSQL, which several dispatchers
	// share, a dispatcher whose clock ran ahead of another's found that
	// one's leases expired early and attempted its deliveries at the
	// same time. Due times stay the claimer's (ClaimRequest.Now). It
	// measures rate-limit slots (TakeRateSlots) too, for the same reason.
	// Off only in tests that drive leases with an injected clock.
	leaseByDB bool

	// tries bounds the runs of a transaction killed as a deadlock's
	// victim (see retry): txTries, 1 in tests that must see every
	// deadlock, which running again would hide.
	tries int
}

var _ Store = (*sqlStore)(nil)

func newSQLStore(ctx context.Context, db *sql.DB, d dialect) (*sqlStore, error) {
	s := &sqlStore{db: db, d: d, stmts: map[string]*sql.Stmt{}, leaseByDB: d.dbNow != "", tries: txTries}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if d.schemaLock != "" {
			if _, err := tx.ExecContext(ctx, d.schemaLock); err != nil {
				return err
			}
		}
		for _, stmt := range strings.Split(strings.NewReplacer("{blob}", d.blob, "{deliveriesWith}", d.deliveriesWith, "{deliveriesAlter}", d.deliveriesAlter).Replace(schema), ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("store: creating the schema: %w", err)
			}
		}
		return addColumns(ctx, tx, d)
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	if d.prepare {
		// Prepared now, before any transaction: on SQLite's one
		// connection a prepare during a transaction would wait for it.
		for _, q := range hotQueries(d) {
			st, err := db.PrepareContext(ctx, q)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("store: preparing %q: %w", q, err)
			}
			s.stmts[q] = st
		}
	}
	return s, nil
}

// addColumns adds to the tables made by an earlier version the columns
// added since (columns).
func addColumns(ctx context.Context, tx *sql.Tx, d dialect) error {
	for _, c := range columns {
		var n int
		if err := tx.QueryRowContext(ctx, d.rebind(d.hasColumn), c.table, c.name).Scan(&n); err != nil {
			return fmt.Errorf("store: reading the schema: %w", err)
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, "ALTER TABLE "+c.table+" ADD COLUMN "+c.name+" "+c.def); err != nil {
			return fmt.Errorf("store: adding %s.%s: %w", c.table, c.name, err)
		}
	}
	return nil
}

func (s *sqlStore) Close() error {
	for _, st := range s.stmts {
		st.Close()
	}
	return s.db.Close()
}

// tx runs f in a transaction, committing when it returns nil, and
// again when the database killed it as a deadlock's victim or a
// serialization failure (see retry): f must set what it returns from
// scratch.
func (s *sqlStore) tx(ctx context.Context, f func(*sql.Tx) error) error {
	return retry(ctx, s.tries, func() error { return s.tx1(ctx, f) })
}

// tx1 is one run of tx.
func (s *sqlStore) tx1(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *sqlStore) exec(ctx context.Context, q querier, query string, args ...any) (int64, error) {
	res, err := q.ExecContext(ctx, s.d.rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// stmt returns query prepared for tx when it is one of stmts, else nil
// (tx's own methods then parse it).
func (s *sqlStore) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st := s.stmts[query]
	if st == nil {
		return nil, nil
	}
	return tx.StmtContext(ctx, st), nil
}

// execHot is exec in tx of a query with a fixed text, prepared once on
// SQLite (see stmts).
func (s *sqlStore) execHot(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return 0, err
	}
	if st == nil {
		return s.exec(ctx, tx, query, args...)
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// queryHot is tx.QueryContext of a query with a fixed text, prepared
// once on SQLite (see stmts).
func (s *sqlStore) queryHot(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return tx.QueryContext(ctx, s.d.rebind(query), args...)
	}
	return st.QueryContext(ctx, args...)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Endpoints.

const endpointColumns = `e.id, e.url, e.description, e.event_types, e.secrets, e.rate_limit, e.enabled, e.disabled_reason, e.failing_since, e.created, e.updated, e.revision`

type scanner interface{ Scan(dest ...any) error }

func scanEndpoint(r scanner, e *Endpoint) error {
	var (
		types, secrets                 string
		enabled                        int
		failingSince, created, updated int64
	)
	if err := r.Scan(&e.ID, &e.URL, &e.Description, &types, &secrets, &e.RateLimit, &enabled, &e.DisabledReason, &failingSince, &created, &updated, &e.Revision); err != nil {
		return err
	}
	return decodeEndpoint(e, types, secrets, enabled, failingSince, created, updated)
}

// decodeEndpoint fills the fields of e stored as JSON, integers and nanoseconds.
func decodeEndpoint(e *Endpoint, types, secrets string, enabled int, failingSince, created, updated int64) error {
	e.Enabled = enabled != 0
	e.FailingSince, e.Created, e.Updated = fromNanos(failingSince), fromNanos(created), fromNanos(updated)
	e.EventTypes, e.Secrets = nil, nil
	if err := json.Unmarshal([]byte(types), &e.EventTypes); err != nil {
		return fmt.Errorf("store: endpoint %s: event types: %w", e.ID, err)
	}
	if err := json.Unmarshal([]byte(secrets), &e.Secrets); err != nil {
		return fmt.Errorf("store: endpoint %s: secrets: %w", e.ID, err)
	}
	return nil
}

func endpointJSON(e *Endpoint) (types, secrets string) {
	t, _ := json.Marshal(nonNil(e.EventTypes))
	sec, _ := json.Marshal(nonNil(e.Secrets))
	return string(t), string(sec)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *sqlStore) CreateEndpoint(ctx context.Context, e *Endpoint) error {
	types, secrets := endpointJSON(e)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `INSERT INTO endpoints (id, url, description, event_types, secrets, rate_limit, enabled, disabled_reason, failing_since, created, updated, revision)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
			e.ID, e.URL, e.Description, types, secrets, e.RateLimit, boolInt(e.Enabled), e.DisabledReason, nanos(e.FailingSince), nanos(e.Created), nanos(e.Updated))
		if err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, bumpEndpointsQuery)
		return err
	})
	if err == nil {
		e.Revision = 1
	}
	return err
}

func (s *sqlStore) GetEndpoint(ctx context.Context, id string) (*Endpoint, error) {
	e := new(Endpoint)
	err := scanEndpoint(s.db.QueryRowContext(ctx, s.d.rebind(`SELECT `+endpointColumns+` FROM endpoints e WHERE e.id = ?`), id), e)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: endpoint %s", ErrNotFound, id)
	}
	return e, err
}

func (s *sqlStore) ListEndpoints(ctx context.Context) ([]*Endpoint, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+endpointColumns+` FROM endpoints e ORDER BY e.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*Endpoint
	for rows.Next() {
		e := new(Endpoint)
		if err := scanEndpoint(rows, e); err != nil {
			return nil, err
		}
		list = append(list, e)
	}
	return list, rows.Err()
}

// UpdateEndpoint writes the endpoint over the revision it was read at
// (Endpoint.Revision), then pauses or resumes its deliveries. Without the
// revision, the API's read-modify-write of an endpoint undid a change
// made in between: a PATCH of its description enabled again an endpoint
// the dispatcher had just disabled (410 Gone), and of two rotations at
// once, the secret one of them answered with never signed.
//
// On PostgreSQL it first locks the endpoint's row FOR UPDATE, as
// DeleteEndpoint does: the completions of attempts to it
// (each holding a key-share lock on its endpoints' rows, taken before it
// writes a delivery, then writing the endpoint's health) are waited for,
// and new ones wait until it commits, so both take the endpoint's row,
// then the deliveries'. Without it (the UPDATE's own lock does not
// conflict with a key share) a completion holding a delivery waited to
// write the endpoint's health while the update, holding the endpoint,
// waited for that delivery: a deadlock, one of them killed (40P01).
func (s *sqlStore) UpdateEndpoint(ctx context.Context, e *Endpoint) error {
	var revision int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockEndpoint(ctx, tx, e.ID); err != nil {
			return err
		}
		var err error
		revision, err = s.updateEndpoint(ctx, tx, e)
		return err
	})
	if err == nil {
		e.Revision = revision
	}
	return err
}

// ChangeEndpoint is a read-modify-write of the endpoint in one
// transaction, its row locked first as UpdateEndpoint locks it (on
// SQLite the one connection serializes it): no write lands between the
// read and the write, so none makes it give up, however often the
// endpoint's health changes.
func (s *sqlStore) ChangeEndpoint(ctx context.Context, id string, f func(e *Endpoint) error) (*Endpoint, error) {
	var e *Endpoint
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockEndpoint(ctx, tx, id); err != nil {
			return err
		}
		e = new(Endpoint)
		if err := scanEndpoint(tx.QueryRowContext(ctx, s.d.rebind(`SELECT `+endpointColumns+` FROM endpoints e WHERE e.id = ?`), id), e); err != nil {
			return err
		}
		if err := f(e); err != nil {
			return err
		}
		e.ID = id
		var err error
		e.Revision, err = s.updateEndpoint(ctx, tx, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// updateEndpoint writes e in tx, its row locked (see UpdateEndpoint),
// and returns its new revision.
func (s *sqlStore) updateEndpoint(ctx context.Context, tx *sql.Tx, e *Endpoint) (int64, error) {
	types, secrets := endpointJSON(e)
	var revision int64
	err := tx.QueryRowContext(ctx, s.d.rebind(`UPDATE endpoints SET url = ?, description = ?, event_types = ?, secrets = ?, rate_limit = ?, enabled = ?,
		disabled_reason = ?, failing_since = ?, updated = ?, revision = revision + 1 WHERE id = ? AND (CAST(? AS BIGINT) = 0 OR revision = ?)
		RETURNING revision`),
		e.URL, e.Description, types, secrets, e.RateLimit, boolInt(e.Enabled), e.DisabledReason, nanos(e.FailingSince), nanos(e.Updated), e.ID,
		e.Revision, e.Revision).Scan(&revision)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: endpoint %s: revision %d", ErrConflict, e.ID, e.Revision)
	}
	if err != nil {
		return 0, err
	}
	from, to := StatusPending, StatusPaused
	if e.Enabled {
		from, to = to, from
	}
	if s.d.forUpdate != "" {
		// Locked first in id order, as Purge and DeleteEndpoint lock
		// deliveries: the UPDATE locked them in the order it came to
		// them, and a purge of the events of an endpoint's paused
		// deliveries, holding one and waiting for another that the
		// endpoint's enabling held, waiting for the first, was a
		// deadlock, one killed (40P01).
		if _, err := s.exec(ctx, tx, `SELECT COUNT(*) FROM (SELECT id FROM deliveries WHERE endpoint_id = ? AND status = ? ORDER BY id`+s.d.forUpdate+`) x`, e.ID, from); err != nil {
			return 0, err
		}
	}
	if _, err := s.exec(ctx, tx, `UPDATE deliveries SET status = ? WHERE endpoint_id = ? AND status = ?`, to, e.ID, from); err != nil {
		return 0, err
	}
	_, err = s.exec(ctx, tx, bumpEndpointsQuery)
	return revision, err
}

// DeleteEndpoint deletes the endpoint's attempts, then its deliveries,
// then the endpoint. On PostgreSQL it first locks the endpoint's row
// (FOR UPDATE), which waits for the completions recording attempts to
// it (each holds a key-share lock on its endpoints' rows, taken before
// it writes a delivery: see Complete) and keeps new ones from starting
// until it commits: the attempts they inserted are then committed and
// deleted here, and those waiting find the endpoint and its deliveries
// gone (their leases lost). Without it an attempt committed after the
// attempts were deleted and before its delivery was made the deletion
// of the delivery fail (a foreign key).
func (s *sqlStore) DeleteEndpoint(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockEndpoint(ctx, tx, id); err != nil {
			return err
		}
		if s.d.forUpdate != "" {
			// Its deliveries too: a completion that wrote one commits
			// (its attempt is then read, and deleted, below), and one
			// after finds it gone (ErrLeaseLost). The endpoint's row
			// alone, which completions take a key share of first
			// (lockParents), let one through now and then: its attempt
			// committed after the attempts were deleted, and the
			// deliveries' deletion failed on its foreign key (23503).
			if _, err := s.exec(ctx, tx, `SELECT COUNT(*) FROM (SELECT id FROM deliveries WHERE endpoint_id = ? ORDER BY id`+s.d.forUpdate+`) x`, id); err != nil {
				return err
			}
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE endpoint_id = ?)`, id); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM deliveries WHERE endpoint_id = ?`, id); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM endpoints WHERE id = ?`, id); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, bumpEndpointsQuery)
		return err
	})
}

// lockEndpoint reads the endpoint's row in tx, on PostgreSQL locking it
// FOR UPDATE (see UpdateEndpoint and DeleteEndpoint); ErrNotFound if
// there is none.
func (s *sqlStore) lockEndpoint(ctx context.Context, tx *sql.Tx, id string) error {
	var found string
	err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT id FROM endpoints WHERE id = ?`+s.d.forUpdate), id).Scan(&found)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: endpoint %s", ErrNotFound, id)
	}
	return err
}
