package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The hot statements: claim, completion and release. A completion
// with a LeaseUntil is recorded only under that lease (see
// Completion.LeaseUntil). A delivery a Resend asked for again while
// its attempt was under way (resend, its time, at or after the attempt's
// start) is left pending, due at that time, with a new schedule (no
// attempts), whatever the attempt's result; one resent before the
// attempt started (queued, claimed ahead) was attempted as the Resend
// asked: it is left as that attempt, the first of the new schedule,
// leads (Completion.ResentStatus; completeStatus is the status the
// attempt leads to, either way). A delivery left pending by an attempt
// to an endpoint disabled meanwhile is paused, as UpdateEndpoint paused
// the endpoint's others. A delivery a Recover asked for while its
// attempt was under way (recover_at, its time) is left the same way when
// the attempt failed for good, resent before it or not. It returns the
// delivery's attempts, none after a Resend during the attempt or a
// Recover (a new schedule), and its status. Arguments: see
// completeArgs.
const (
	completeStatus        = `(CASE WHEN resend <> 0 AND resend < ? THEN CAST(? AS TEXT) ELSE CAST(? AS TEXT) END)`
	completeNext          = `(CASE WHEN resend <> 0 AND resend < ? THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END)`
	completeDeliveryQuery = `UPDATE deliveries SET status = CASE
			WHEN resend >= ? OR ` + completeStatus + ` = 'pending' OR recover_at <> 0 AND ` + completeStatus + ` = 'failed' THEN
				CASE WHEN (SELECT e.enabled FROM endpoints e WHERE e.id = deliveries.endpoint_id) = 0 THEN 'paused' ELSE 'pending' END
			ELSE ` + completeStatus + ` END,
		attempts = CASE WHEN resend >= ? OR recover_at <> 0 AND ` + completeStatus + ` = 'failed' THEN 0 ELSE attempts + 1 END,
		next_attempt = CASE WHEN resend >= ? THEN resend WHEN recover_at <> 0 AND ` + completeStatus + ` = 'failed' THEN recover_at ELSE ` + completeNext + ` END,
		resend = 0, recover_at = 0, lease_owner = '', lease_until = 0, last_code = ?, updated = ? WHERE id = ? AND lease_owner = ? AND (CAST(? AS BIGINT) = 0 OR lease_until = ?)
		RETURNING attempts, status`
	insertAttemptQuery = `INSERT INTO attempts (id, delivery_id, event_id, endpoint_id, started, duration, status_code, error, response, outcome)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	endpointOKQuery      = `UPDATE endpoints SET failing_since = 0, revision = revision + 1 WHERE id = ? AND failing_since <> 0`
	endpointFailingQuery = `UPDATE endpoints SET failing_since = ?, revision = revision + 1 WHERE id = ? AND failing_since = 0`
)

// claimQuery leases the candidates (see dialect.perEndpoint), returning
// their ids. Arguments: claimArgs's (now, now, per, skip (JSON), rate
// caps (JSON), rate cap, limit, owner, lease until, owner, owner on
// SQLite). A delivery not leased (released), or taken from another
// owner whose lease expired, is attempted after any Resend made
// meanwhile: its resend is cleared (the other owner's completion is
// refused). One its owner takes again keeps it: the attempt under way
// records under the new lease.
func claimQuery(d dialect) string {
	return strings.ReplaceAll(`WITH candidates AS (`+d.perEndpoint+`)
		UPDATE deliveries SET `+claimSet+` WHERE id IN (SELECT id FROM candidates) RETURNING id`, "{ids}", d.idSet)
}

// claimSet is what a claim writes (arguments: owner, lease until, owner,
// owner). A Recover made meanwhile is cleared as a Resend is: the
// attempt it covered did not happen (released) or is refused (taken
// over), and the claim's begins after it.
const claimSet = `lease_owner = ?, lease_until = ?, resend = CASE WHEN lease_owner = ? THEN resend ELSE 0 END,
	recover_at = CASE WHEN lease_owner = ? THEN recover_at ELSE 0 END`

// jobColumns are a claimed delivery's, its event's and its endpoint's
// columns, as scanJobs reads them.
const jobColumns = deliveryColumns + `, ev.id, ev.type, ev.payload, ev.idempotency_key, ev.created, ` + endpointColumns + `, d.lease_until`

// claimJobsQuery reads the claimed deliveries (a JSON array of ids) with
// their events and endpoints.
func claimJobsQuery(d dialect) string {
	return `SELECT ` + jobColumns + `
			FROM deliveries d JOIN events ev ON ev.id = d.event_id JOIN endpoints e ON e.id = d.endpoint_id
			WHERE d.id IN ` + d.idSet + ` ORDER BY d.next_attempt, d.id`
}

// claimReturningQuery is claimQuery and claimJobsQuery in one statement
// (PostgreSQL: an UPDATE in a WITH clause): the updated rows, joined to
// their events and endpoints by their keys. Arguments: claimQuery's, or
// with byDB (leases by the database's clock, dialect.dbNow) now, rate
// caps, rate cap, per, skip, limit, owner, lease (nanoseconds), owner,
// owner: a lease has expired
// when the database's clock has passed it, and ends at that clock plus
// the lease.
func claimReturningQuery(d dialect, byDB bool) string {
	perEndpoint, set := d.perEndpoint, claimSet
	if byDB {
		perEndpoint = strings.Replace(perEndpoint, "x.lease_until <= ?", "x.lease_until <= "+d.dbNow, 1)
		set = strings.Replace(set, "lease_until = ?", "lease_until = "+d.dbNow+" + CAST(? AS BIGINT)", 1)
	}
	return strings.ReplaceAll(`WITH candidates AS (`+perEndpoint+`),
		d AS (UPDATE deliveries SET `+set+` WHERE id IN (SELECT id FROM candidates)
			RETURNING id, event_id, endpoint_id, status, attempts, next_attempt, last_code, created, updated, lease_until)
		SELECT `+jobColumns+` FROM d JOIN events ev ON ev.id = d.event_id JOIN endpoints e ON e.id = d.endpoint_id
		ORDER BY d.next_attempt, d.id`, "{ids}", d.idSet)
}

// releaseQuery drops the owner's (first argument) leases of the
// deliveries (a JSON array of ids). (A Resend made meanwhile left a
// delivery pending and due: the next claim, which clears its resend, is
// the attempt it asked for.) On PostgreSQL it locks them in id order
// first, as DeleteEndpoint locks an endpoint's deliveries: a release of
// several of one endpoint (a claim of a rate-limited one with too few
// slots) locked them in the order it came to them, and one held and
// another waited for by a deletion holding that one and waiting for the
// first was a deadlock, the deletion killed (40P01).
func releaseQuery(d dialect) string {
	if d.forUpdate != "" {
		return `UPDATE deliveries SET lease_owner = '', lease_until = 0 WHERE id IN (
			SELECT id FROM deliveries WHERE lease_owner = ? AND id IN ` + d.idSet + ` ORDER BY id` + d.forUpdate + `)`
	}
	return `UPDATE deliveries SET lease_owner = '', lease_until = 0 WHERE lease_owner = ? AND id IN ` + d.idSet
}

// hotQueries are the statements kept prepared on SQLite.
func hotQueries(d dialect) []string {
	return []string{claimQuery(d), claimJobsQuery(d), releaseQuery(d), completeDeliveryQuery, insertAttemptQuery, endpointOKQuery, endpointFailingQuery,
		endpointsVersionQuery, insertDeliveriesQuery(d)}
}

func (s *sqlStore) Claim(ctx context.Context, r ClaimRequest) ([]*Job, error) {
	if r.Limit <= 0 {
		return nil, nil
	}
	if s.d.claimReturning {
		// One statement, committed on its own with full durability: one
		// round trip. It is never a deadlock's victim: it waits for no
		// row lock (it takes its deliveries FOR UPDATE SKIP LOCKED, reads
		// endpoints and events unlocked, and writes only the rows it
		// locked, no key among them). But with the database's default
		// isolation serializable or repeatable read it can be killed as
		// a serialization failure (40001: reading an endpoint's row a
		// prepared pivot wrote, or locking a delivery updated since its
		// snapshot), which run again succeeds: it is run again as the
		// transactions are (see retry).
		query, args := s.claimReturning(r)
		var jobs []*Job
		err := retry(ctx, s.tries, func() error {
			rows, err := s.db.QueryContext(ctx, query, args...)
			if err != nil {
				return err
			}
			jobs, err = scanJobs(rows)
			return err
		})
		return jobs, err
	}
	args := claimArgs(s.d, r)
	var jobs []*Job
	err := s.relaxedTx(ctx, func(tx *sql.Tx) error {
		rows, err := s.queryHot(ctx, tx, claimQuery(s.d), args...)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows)
		if err != nil || len(ids) == 0 {
			return err
		}
		rows, err = s.queryHot(ctx, tx, claimJobsQuery(s.d), idJSON(ids))
		if err != nil {
			return err
		}
		jobs, err = scanJobs(rows)
		return err
	})
	return jobs, err
}

// claimArgs are the arguments of claimQuery and claimReturningQuery for
// r, and the lease's end. No endpoint gives more than the claim's limit:
// on PostgreSQL every candidate row is locked until the claim commits,
// and the ones past the limit would be locked for nothing (a dispatcher
// asking for an endpoint's room of 160 in a claim of 100 locked 60 rows
// it did not take, which other dispatchers then skipped).
func claimArgs(d dialect, r ClaimRequest) []any {
	per := r.PerEndpoint
	if per <= 0 || per > r.Limit {
		per = r.Limit
	}
	rated := r.RateLimited
	if rated <= 0 || rated > per {
		rated = per
	}
	now, until := nanos(r.Now), nanos(r.Now.Add(r.Lease))
	caps := rateRoomJSON(r.RateRoom, per)
	if d.claimReturning {
		return []any{now, now, caps, rated, per, idJSON(r.Skip), r.Limit, r.Owner, until, r.Owner, r.Owner}
	}
	return []any{now, now, per, idJSON(r.Skip), caps, rated, r.Limit, r.Owner, until, r.Owner, r.Owner}
}

// rateRoomJSON is room (ClaimRequest.RateRoom) as a JSON object, each
// cap within [1, per] (a cap of none is the endpoint skipped: Skip).
func rateRoomJSON(room map[string]int, per int) string {
	caps := make(map[string]int, len(room))
	for id, n := range room {
		caps[id] = min(max(n, 1), per)
	}
	b, _ := json.Marshal(caps)
	return string(b)
}

// claimReturning is the claim statement on PostgreSQL, rebound, with its
// arguments (see claimReturningQuery).
func (s *sqlStore) claimReturning(r ClaimRequest) (string, []any) {
	args := claimArgs(s.d, r)
	if s.leaseByDB {
		args = []any{args[0], args[2], args[3], args[4], args[5], args[6], r.Owner, int64(r.Lease), r.Owner, r.Owner}
	}
	return s.d.rebind(claimReturningQuery(s.d, s.leaseByDB)), args
}

// scanJobs reads and closes rows of claimed deliveries (jobColumns).
func scanJobs(rows *sql.Rows) ([]*Job, error) {
	defer rows.Close()
	var jobs []*Job
	// Jobs of one endpoint share its decoded event types and secrets.
	decoded := map[string]*Endpoint{}
	for rows.Next() {
		j := &Job{}
		var (
			leaseUntil                         int64
			key                                sql.NullString
			created                            int64
			types, secrets                     string
			enabled                            int
			failingSince, epCreated, epUpdated int64
			next, dCreated, dUpdated           int64
		)
		e := &j.Endpoint
		d := &j.Delivery
		if err := rows.Scan(&d.ID, &d.EventID, &d.EndpointID, &d.Status, &d.Attempts, &next, &d.LastCode, &dCreated, &dUpdated,
			&j.Event.ID, &j.Event.Type, &j.Event.Payload, &key, &created,
			&e.ID, &e.URL, &e.Description, &types, &secrets, &e.RateLimit, &enabled, &e.DisabledReason, &failingSince, &epCreated, &epUpdated, &e.Revision, &leaseUntil); err != nil {
			return nil, err
		}
		j.LeaseUntil = time.Unix(0, leaseUntil)
		d.NextAttempt, d.Created, d.Updated = fromNanos(next), fromNanos(dCreated), fromNanos(dUpdated)
		j.Event.IdempotencyKey, j.Event.Created = key.String, fromNanos(created)
		if prev := decoded[e.ID]; prev != nil {
			*e = *prev
		} else {
			if err := decodeEndpoint(e, types, secrets, enabled, failingSince, epCreated, epUpdated); err != nil {
				return nil, err
			}
			decoded[e.ID] = e
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// scanIDs reads and closes rows of one column, an id each.
func scanIDs(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// idJSON is ids as a JSON array, the argument of dialect.idSet.
func idJSON(ids []string) string {
	b, _ := json.Marshal(nonNil(ids))
	return string(b)
}

func (s *sqlStore) Release(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.relaxedTx(ctx, func(tx *sql.Tx) error {
		_, err := s.execHot(ctx, tx, releaseQuery(s.d), owner, idJSON(ids))
		return err
	})
}

func (s *sqlStore) Complete(ctx context.Context, cs ...*Completion) error {
	// Recorded in their endpoints' id order (as they came for each
	// endpoint): each writes its endpoint's health (its row), and a batch
	// writing one endpoint's then another's while another dispatcher's
	// wrote them the other way round was a deadlock, one killed (40P01).
	cs = slices.Clone(cs)
	slices.SortStableFunc(cs, func(a, b *Completion) int { return strings.Compare(a.Attempt.EndpointID, b.Attempt.EndpointID) })
	lost := 0
	err := s.relaxedTx(ctx, func(tx *sql.Tx) error {
		lost = 0
		for _, c := range cs {
			c.Resent, c.Disabled, c.Failed = false, false, false
		}
		if err := s.lockParents(ctx, tx, cs); err != nil {
			return err
		}
		if s.d.bulk && bulkable(cs) {
			var err error
			lost, err = s.completeBulk(ctx, tx, cs)
			return err
		}
		health := map[string]bool{}
		disabled := false
		for _, c := range cs {
			ok, err := s.complete(ctx, tx, c, health)
			if err != nil {
				return err
			}
			c.LeaseLost = !ok
			if !ok {
				lost++
			}
			disabled = disabled || ok && c.Disable != ""
		}
		if disabled {
			_, err := s.exec(ctx, tx, bumpEndpointsQuery)
			return err
		}
		return nil
	})
	if err == nil && lost > 0 {
		err = fmt.Errorf("%w: %d of %d completions", ErrLeaseLost, lost, len(cs))
	}
	return err
}

// lockParents takes, on PostgreSQL, a key-share lock on the rows of
// the endpoints of cs, then of their events, then locks the deliveries
// cs write, in id order, before a delivery of theirs is written, in one
// statement. An endpoint being deleted (DeleteEndpoint holds its row FOR
// UPDATE), or an event being purged (Purge holds its row FOR UPDATE), is
// waited for, and its deliveries are then gone (their completions'
// leases lost); one not yet being deleted or purged is then deleted only
// after cs commit, attempts included (Purge skips the events locked
// here). DeleteEndpoint locks the endpoint's deliveries too, after its
// row: a completion that got past this lock and wrote one (storetest
// DeleteEndpointCompleting saw it about once in 60 runs) is waited for.
//
// When a completion of cs disables its endpoint, the endpoints' rows
// are locked FOR UPDATE instead, as UpdateEndpoint locks them: the
// completions of attempts to them holding a key share are waited for,
// and new ones wait until cs commit, so every one takes the endpoint's
// row before its deliveries'. With a key share, a completion disabling
// the endpoint (writing its row, then pausing its deliveries) waited
// for a delivery another completion held, which waited to write the
// endpoint's health: a deadlock, one of them killed (40P01).
//
// The deliveries are cs's and the pending ones of the endpoints a
// completion of cs disables (which it pauses), all at once in id order,
// as Release, Resend and Recover lock theirs: cs, written in their
// endpoints' id order (or, by completeBulk, in the order its join came
// to them), locked them in another, and disabling an endpoint locked its
// pending deliveries with others of cs held already; a Resend of an
// event with deliveries among them, holding one and waiting for another
// held here, waiting for the first, was a deadlock, one killed (40P01).
func (s *sqlStore) lockParents(ctx context.Context, tx *sql.Tx, cs []*Completion) error {
	if s.d.forKeyShare == "" {
		return nil
	}
	query, args := lockParentsQuery(s.d, cs)
	_, err := s.exec(ctx, tx, query, args...)
	return err
}

// lockParentsQuery is lockParents's statement and its arguments, for
// PostgreSQL only (= ANY(ARRAY(…)); SQLite takes no row locks).
func lockParentsQuery(d dialect, cs []*Completion) (string, []any) {
	endpoints := make([]string, 0, len(cs))
	events := make([]string, 0, len(cs))
	deliveries := make([]string, 0, len(cs))
	var disabling []string
	lock := d.forKeyShare
	for _, c := range cs {
		endpoints = append(endpoints, c.Attempt.EndpointID)
		events = append(events, c.Attempt.EventID)
		deliveries = append(deliveries, c.Attempt.DeliveryID)
		if c.Disable != "" {
			lock = d.forUpdate
			disabling = append(disabling, c.Attempt.EndpointID)
		}
	}
	// (= ANY of an array, and an endpoint's pending ones by its id,
	// not IN sets: with an OR, IN sets were hashed subplans filtering a
	// scan of the whole deliveries table; these are searched in the
	// indexes.)
	mine, args := `id = ANY(ARRAY`+d.idSet+`)`, []any{idJSON(endpoints), idJSON(events), idJSON(deliveries)}
	for _, id := range disabling {
		mine, args = mine+` OR status = ? AND endpoint_id = ?`, append(args, StatusPending, id)
	}
	return `WITH e AS (SELECT id FROM endpoints WHERE id IN ` + d.idSet + ` ORDER BY id` + lock + `),
		v AS (SELECT id FROM events WHERE id IN ` + d.idSet + ` ORDER BY id` + d.forKeyShare + `),
		d AS (SELECT id FROM deliveries WHERE ` + mine + ` ORDER BY id` + d.forUpdate + `)
		SELECT (SELECT COUNT(*) FROM e), (SELECT COUNT(*) FROM v), (SELECT COUNT(*) FROM d)`, args
}

// relaxedTx is tx with commit durability relaxed (see Complete), run
// again as tx is (see retry).
func (s *sqlStore) relaxedTx(ctx context.Context, f func(*sql.Tx) error) error {
	return retry(ctx, s.tries, func() error { return s.relaxedTx1(ctx, f) })
}

// relaxedTx1 is one run of relaxedTx.
func (s *sqlStore) relaxedTx1(ctx context.Context, f func(*sql.Tx) error) error {
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

// resent is the delivery's new state after c when a Resend was made
// before its attempt started (see Completion.ResentStatus).
func (c *Completion) resent() (string, time.Time) {
	if c.ResentStatus == "" {
		return c.Status, c.NextAttempt
	}
	return c.ResentStatus, c.ResentNextAttempt
}

// completeArgs are completeDeliveryQuery's arguments for c.
func completeArgs(c *Completion) []any {
	a := &c.Attempt
	started := c.leaseStarted()
	rs, rn := c.resent()
	status := []any{started, rs, c.Status} // completeStatus
	args := append([]any{started}, status...)
	args = append(args, status...)
	args = append(args, status...)
	args = append(args, started)
	args = append(args, status...)
	args = append(args, started)
	args = append(args, status...)
	args = append(args, started, nanos(rn), nanos(c.NextAttempt)) // completeNext
	return append(args, a.StatusCode, nanos(a.Started.Add(a.Duration)), a.DeliveryID, c.Owner, nanos(c.LeaseUntil), nanos(c.LeaseUntil))
}

// leaseStarted is c's attempt's start by its lease's clock, in
// nanoseconds (see Completion.LeaseStarted): 1 when not known, before
// any Resend.
func (c *Completion) leaseStarted() int64 {
	if c.LeaseStarted.IsZero() {
		return 1
	}
	return nanos(c.LeaseStarted)
}

// complete records one completion in tx; false if the lease was lost.
// health holds the EndpointOK last written in tx for each endpoint: the
// same again would change nothing, and is not written.
func (s *sqlStore) complete(ctx context.Context, tx *sql.Tx, c *Completion, health map[string]bool) (bool, error) {
	a := &c.Attempt
	rows, err := s.queryHot(ctx, tx, completeDeliveryQuery, completeArgs(c)...)
	if err != nil {
		return false, err
	}
	var (
		attempts []int
		status   string
	)
	for rows.Next() {
		var n int
		if err := rows.Scan(&n, &status); err != nil {
			rows.Close()
			return false, err
		}
		attempts = append(attempts, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(attempts) == 0 {
		return false, err
	}
	c.Resent, c.Failed = attempts[0] == 0, status == StatusFailed
	response := a.Response
	if response == nil {
		response = []byte{}
	}
	if _, err := s.execHot(ctx, tx, insertAttemptQuery,
		a.ID, a.DeliveryID, a.EventID, a.EndpointID, nanos(a.Started), int64(a.Duration), a.StatusCode, storedText(a.Error), response, c.Status); err != nil {
		return false, err
	}
	if c.Disable != "" {
		// Before its own health write, which raises the revision when
		// it starts a run of failures: the revision compared is the
		// one the attempt was made to. (Every write of its failing
		// since raises it too: a run of failures started anew since,
		// after a success or a user's enable, leaves it enabled.)
		n, err := s.exec(ctx, tx, `UPDATE endpoints SET enabled = 0, disabled_reason = ?, updated = ?, revision = revision + 1
			WHERE id = ? AND enabled = 1 AND (CAST(? AS BIGINT) = 0 OR revision = ?)`,
			storedText(c.Disable), nanos(a.Started.Add(a.Duration)), a.EndpointID, c.DisableRevision, c.DisableRevision)
		if err != nil {
			return false, err
		}
		if n > 0 {
			c.Disabled = true
			// Its pending deliveries were locked in id order by
			// lockParents, as Release locks them.
			if _, err := s.exec(ctx, tx, `UPDATE deliveries SET status = ? WHERE endpoint_id = ? AND status = ?`,
				StatusPaused, a.EndpointID, StatusPending); err != nil {
				return false, err
			}
		}
	}
	if err := s.writeHealth(ctx, tx, c, health); err != nil {
		return false, err
	}
	notices := c.Notices
	if c.ExhaustedNotice != nil && c.Failed {
		notices = append([]*Event{c.ExhaustedNotice}, notices...)
	}
	if c.Disabled && c.DisableNotice != nil {
		notices = append([]*Event{c.DisableNotice}, notices...)
	}
	for _, ev := range notices {
		if _, err := s.insertEvent(ctx, tx, ev, []string{c.NoticeEndpoint}); err != nil {
			return false, err
		}
	}
	return true, nil
}

// nextDueQuery finds, endpoint by endpoint through the (endpoint_id,
// status, next_attempt, …) index, but for the endpoints skipped (a JSON
// array), the earliest time a pending delivery is claimable: when it is
// due, or when its lease ends if later. Per endpoint it reads the first
// unleased delivery in order of due time, and the deliveries due no
// later, leased but for those due at the same time, whose leases may end
// earlier: every delivery due after that first one is claimable only
// after it. Leased deliveries are the few that dispatchers hold, so a
// backlog waiting for its retries is not read, however long (reading
// every pending delivery, PostgreSQL scanned the whole table at every
// idle poll).
func nextDueQuery(d dialect) string {
	return `SELECT MIN((SELECT MIN(CASE WHEN x.lease_until > x.next_attempt THEN x.lease_until ELSE x.next_attempt END) FROM deliveries x
			WHERE x.endpoint_id = e.id AND x.status = 'pending' AND x.next_attempt <= COALESCE(
				(SELECT y.next_attempt FROM deliveries y WHERE y.endpoint_id = e.id AND y.status = 'pending' AND y.lease_until = 0
					ORDER BY y.next_attempt LIMIT 1), 9223372036854775807)))
		FROM endpoints e WHERE e.enabled = 1 AND e.id NOT IN ` + d.idSet
}

func (s *sqlStore) NextDue(ctx context.Context, skip ...string) (time.Time, bool, error) {
	var t sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.d.rebind(nextDueQuery(s.d)), idJSON(skip)).Scan(&t)
	if err != nil || !t.Valid {
		return time.Time{}, false, err
	}
	return time.Unix(0, t.Int64), true, nil
}
