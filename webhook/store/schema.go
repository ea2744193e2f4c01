package store

import (
	"strconv"
	"strings"
)

// schema creates the tables; {blob} is the dialect's byte-string type.
const schema = `
CREATE TABLE IF NOT EXISTS endpoints (
	id TEXT PRIMARY KEY,
	url TEXT NOT NULL,
	description TEXT NOT NULL,
	event_types TEXT NOT NULL,
	secrets TEXT NOT NULL,
	rate_limit INTEGER NOT NULL,
	enabled INTEGER NOT NULL,
	disabled_reason TEXT NOT NULL,
	failing_since BIGINT NOT NULL,
	created BIGINT NOT NULL,
	updated BIGINT NOT NULL,
	revision BIGINT NOT NULL DEFAULT 1,
	rate_tat BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
	id TEXT PRIMARY KEY,
	type TEXT NOT NULL,
	payload {blob} NOT NULL,
	idempotency_key TEXT,
	created BIGINT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_idempotency ON events (idempotency_key);
CREATE INDEX IF NOT EXISTS events_created ON events (created);
CREATE TABLE IF NOT EXISTS deliveries (
	id TEXT PRIMARY KEY,
	event_id TEXT NOT NULL REFERENCES events (id),
	endpoint_id TEXT NOT NULL REFERENCES endpoints (id),
	status TEXT NOT NULL,
	attempts INTEGER NOT NULL,
	next_attempt BIGINT NOT NULL,
	lease_owner TEXT NOT NULL,
	lease_until BIGINT NOT NULL,
	last_code INTEGER NOT NULL,
	created BIGINT NOT NULL,
	updated BIGINT NOT NULL,
	resend BIGINT NOT NULL DEFAULT 0,
	recover_at BIGINT NOT NULL DEFAULT 0,
	UNIQUE (event_id, endpoint_id)
){deliveriesWith};
{deliveriesAlter};
DROP INDEX IF EXISTS deliveries_due;
DROP INDEX IF EXISTS deliveries_endpoint;
CREATE INDEX IF NOT EXISTS deliveries_endpoint_due ON deliveries (endpoint_id, status, next_attempt, id);
CREATE TABLE IF NOT EXISTS attempts (
	id TEXT PRIMARY KEY,
	delivery_id TEXT NOT NULL REFERENCES deliveries (id),
	event_id TEXT NOT NULL,
	endpoint_id TEXT NOT NULL,
	started BIGINT NOT NULL,
	duration BIGINT NOT NULL,
	status_code INTEGER NOT NULL,
	error TEXT NOT NULL,
	response {blob} NOT NULL,
	outcome TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_event ON attempts (event_id, started);
CREATE INDEX IF NOT EXISTS attempts_delivery ON attempts (delivery_id);
CREATE TABLE IF NOT EXISTS endpoints_version (
	id INTEGER PRIMARY KEY,
	version BIGINT NOT NULL
);
INSERT INTO endpoints_version (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS tokens (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	hash {blob} NOT NULL UNIQUE,
	created BIGINT NOT NULL,
	revoked BIGINT NOT NULL
);
`

// columns are the columns added to a table after it was first made: a
// table made before is given them as the store opens (see addColumns).
var columns = []struct{ table, name, def string }{
	// resend is when a Resend asked for another attempt of a delivery
	// leased meanwhile (0: none): the attempt under way, whatever its
	// result, then leaves the delivery pending, due at that time.
	{"deliveries", "resend", "BIGINT NOT NULL DEFAULT 0"},
	// recover_at is when a Recover asked for another attempt of a
	// delivery leased meanwhile (0: none), should the attempt under way
	// fail for good: the delivery is then left pending, due at that time.
	{"deliveries", "recover_at", "BIGINT NOT NULL DEFAULT 0"},
	// revision is raised by every write to an endpoint's row; an
	// UpdateEndpoint is written only over the revision it read (see
	// Endpoint.Revision).
	{"endpoints", "revision", "BIGINT NOT NULL DEFAULT 1"},
	// rate_tat is the theoretical arrival time of the endpoint's next
	// rate-limit slot (0: none taken yet), which TakeRateSlots moves.
	{"endpoints", "rate_tat", "BIGINT NOT NULL DEFAULT 0"},
}

// dialect is what differs between SQLite and PostgreSQL.
type dialect struct {
	name string
	// blob is the byte-string column type.
	blob string
	// dollar numbers placeholders $1, $2… instead of ?.
	dollar bool
	// relax and unrelax are run on the connection around a completion
	// transaction, relaxLocal inside it: commits that need not survive a
	// power failure (see Store.Complete).
	relax, unrelax, relaxLocal string
	// claimReturning: a claim is one statement (claimReturningQuery),
	// committed on its own with full durability, where SQLite's takes two
	// in a relaxed transaction. On a server several dispatchers share, a
	// claim lost in a crash of the server alone would let another
	// dispatcher attempt a delivery whose first attempt is still running.
	claimReturning bool
	// deliveriesWith ends the deliveries table's definition, and
	// deliveriesAlter sets the same on a table made before it was added.
	deliveriesWith, deliveriesAlter string
	// schemaLock, run first in the schema transaction, keeps dispatchers
	// starting together from creating the tables twice.
	schemaLock string
	// pairs is a table x(id, endpoint) of the objects of one JSON array
	// argument (insertDeliveriesQuery).
	pairs string
	// hasColumn counts the columns of a table (first argument) with a
	// name (second): 1 when it has it.
	hasColumn string
	// tokenLock, run first in CreateFirstToken's transaction, makes
	// dispatchers starting together take turns.
	tokenLock string
	// bulk writes a batch of completions in two statements (completeBulk):
	// on PostgreSQL each statement is a round trip; SQLite's are calls.
	bulk bool
	// prepare keeps the hot statements prepared (sqlStore.stmts).
	prepare bool
	// idSet is a subquery of the strings of one JSON array argument, so
	// that a list of ids of any length is one statement text.
	idSet string
	// skipLocked ends a select that locks the rows it returns, skipping
	// those another transaction holds (PostgreSQL; SQLite has one writer).
	skipLocked string
	// forUpdate and forKeyShare end a select that locks the rows it
	// returns, against their deletion (forUpdate, as DeleteEndpoint
	// takes an endpoint's row) or not (forKeyShare: the lock a
	// reference to the row takes). Empty on SQLite, whose writes are one
	// after the other.
	forUpdate, forKeyShare string
	// perEndpoint is the claim's candidate select: up to ? (the
	// per-endpoint cap) of the earliest due deliveries of each enabled
	// endpoint not in the skip list ({ids}), read from the (endpoint_id, status,
	// next_attempt, id) index, so an endpoint skipped costs nothing
	// however large its backlog; the earliest ? (the claim's limit) of
	// them, and of an endpoint with a rate limit no more than its rate
	// cap (ClaimRequest.RateRoom, a JSON object of caps by endpoint id,
	// or for one not in it the rate cap, ClaimRequest.RateLimited).
	// Arguments: now, now, per, skip (a JSON array), caps, rate cap,
	// limit on SQLite; now, now, caps, rate cap, per, skip, limit on
	// PostgreSQL (see claimArgs). The
	// limits are written (? + 0): SQLite treats a bare bound LIMIT as a
	// constant of the plan, so binding a new value re-prepared the whole
	// statement at every claim.
	perEndpoint string
	// rateLock reads an endpoint's rate_tat (argument: its id), and
	// where {now} is the database's clock (dialect.dbNow) that too, and
	// locks its row until the transaction ends: FOR NO KEY UPDATE on
	// PostgreSQL (which the key-share locks of completions do not wait
	// for, nor wait for); on SQLite an UPDATE that writes nothing new, so
	// that the transaction takes the write lock before it reads, rather
	// than fail (SQLITE_BUSY) to upgrade a read that another connection
	// wrote after.
	rateLock string
	// dbNow is the database's clock in Unix nanoseconds, which leases
	// are measured by where several dispatchers share the database
	// (PostgreSQL): see sqlStore.leaseByDB. Empty on SQLite.
	dbNow string
}

var (
	sqliteDialect = dialect{name: "sqlite", blob: "BLOB", prepare: true, idSet: "(SELECT value FROM json_each(?))",
		hasColumn: "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?",
		pairs:     "(SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.endpoint') AS endpoint FROM json_each(?)) x",
		relax:     "PRAGMA synchronous = NORMAL", unrelax: "PRAGMA synchronous = FULL",
		rateLock: "UPDATE endpoints SET rate_tat = rate_tat WHERE id = ? RETURNING rate_tat{now}",
		// SQLite has no LATERAL: the per-endpoint select is a correlated
		// IN list, run once per endpoint row; CROSS JOIN keeps endpoints
		// the outer loop (a plain JOIN lets the planner scan every due
		// delivery and test each against the list).
		// (Nor does it take an outer column in a LIMIT: the cap of the
		// rate-limited endpoints is their rows' numbers.)
		perEndpoint: `SELECT id, next_attempt FROM (SELECT d.id, d.next_attempt, e.id AS endpoint, e.rate_limit AS rate,
				row_number() OVER (PARTITION BY e.id ORDER BY d.next_attempt, d.id) AS n
			FROM endpoints e CROSS JOIN deliveries d ON d.id IN (
				SELECT x.id FROM deliveries x WHERE x.endpoint_id = e.id AND x.status = 'pending' AND x.next_attempt <= ? AND x.lease_until <= ?
				ORDER BY x.next_attempt, x.id LIMIT (? + 0))
			WHERE e.enabled = 1 AND e.id NOT IN {ids}) WHERE rate <= 0 OR n <= COALESCE((SELECT r.value FROM json_each(?) r WHERE r.key = endpoint), ?)
			ORDER BY next_attempt, id LIMIT (? + 0)`}
	postgresDialect = dialect{name: "postgres", blob: "BYTEA", dollar: true,
		idSet: "(SELECT jsonb_array_elements_text(CAST(? AS jsonb)))", skipLocked: " FOR UPDATE SKIP LOCKED",
		forUpdate: " FOR UPDATE", forKeyShare: " FOR KEY SHARE",
		// Half of each page is left free: a claim takes its batch of
		// deliveries (100) in the order they were stored, and with room
		// for a new version of every row on its page each claim's update
		// is HOT (no index entry); at 70, 52 of 100 were not, each adding
		// an entry to all three indexes (TestClaimUpdatesInPlacePostgres).
		deliveriesWith: " WITH (fillfactor = 50)", deliveriesAlter: "ALTER TABLE deliveries SET (fillfactor = 50)",
		relaxLocal: "SET LOCAL synchronous_commit = off", claimReturning: true, schemaLock: "SELECT pg_advisory_xact_lock(7406190209)",
		hasColumn: "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?",
		pairs:     "jsonb_to_recordset(CAST(? AS jsonb)) AS x(id text, endpoint text)",
		tokenLock: "SELECT pg_advisory_xact_lock(7406190210)", bulk: true,
		rateLock: "SELECT rate_tat{now} FROM endpoints WHERE id = ? FOR NO KEY UPDATE",
		dbNow:    "CAST(EXTRACT(EPOCH FROM now()) * 1000000000 AS BIGINT)",
		// Each endpoint's rows are locked as they are read, skipping those
		// another dispatcher's claim holds, so two claims at once each
		// find free rows (and PostgreSQL re-checks the conditions on a row
		// updated meanwhile).
		perEndpoint: `SELECT d.id, d.next_attempt FROM endpoints e CROSS JOIN LATERAL (
				SELECT x.id, x.next_attempt FROM deliveries x WHERE x.endpoint_id = e.id AND x.status = 'pending' AND x.next_attempt <= ? AND x.lease_until <= ?
				ORDER BY x.next_attempt, x.id LIMIT CASE WHEN e.rate_limit > 0 THEN COALESCE(CAST(CAST(? AS jsonb) ->> e.id AS BIGINT), CAST(? AS BIGINT)) ELSE CAST(? AS BIGINT) END
				FOR UPDATE SKIP LOCKED) d
			WHERE e.enabled = 1 AND e.id NOT IN {ids} ORDER BY d.next_attempt, d.id LIMIT ?`}
)

// rebind rewrites ? placeholders for the dialect.
func (d dialect) rebind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
