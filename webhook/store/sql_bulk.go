package store

import (
	"context"
	"database/sql"
	"encoding/json"
)

// bulkable reports whether cs can be written by completeBulk: no
// completion disables its endpoint or inserts notices (those few take
// the row-by-row path).
func bulkable(cs []*Completion) bool {
	for _, c := range cs {
		if c.Disable != "" || len(c.Notices) > 0 || c.DisableNotice != nil || c.ExhaustedNotice != nil {
			return false
		}
	}
	return len(cs) > 1
}

// bulkDelivery and bulkAttempt are one completion's rows, as the JSON
// the bulk statements read.
type bulkDelivery struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	Event    string `json:"event"`
	Owner    string `json:"owner"`
	Lease    int64  `json:"lease"` // Completion.LeaseUntil, 0 for any
	Status   string `json:"status"`
	Next     int64  `json:"next"`
	Code     int    `json:"code"`
	Updated  int64  `json:"updated"`
	Started  int64  `json:"started"`
	RStatus  string `json:"rstatus"` // Completion.resent
	RNext    int64  `json:"rnext"`
}

type bulkAttempt struct {
	ID         string `json:"id"`
	DeliveryID string `json:"delivery_id"`
	EventID    string `json:"event_id"`
	EndpointID string `json:"endpoint_id"`
	Started    int64  `json:"started"`
	Duration   int64  `json:"duration"`
	StatusCode int    `json:"status_code"`
	Error      string `json:"error"`
	Response   []byte `json:"response"` // base64 in JSON
	Outcome    string `json:"outcome"`
}

// The bulk statements (PostgreSQL): a batch of completions in two
// statements after lockParents' one, where the row-by-row path makes two or three round trips
// per completion, the writer's whole cost against a local server.
// lockParents has locked the endpoints' rows, the events' and the
// deliveries' before (the first statement's key-share locks on the
// endpoints (e) and events (v) are then held already): a delivery of an
// endpoint deleted or an event purged meanwhile is not matched. A resend, and a recover,
// are honoured as completeDeliveryQuery does (bulkStatus is its
// completeStatus).
const (
	bulkStatus          = `(CASE WHEN d.resend <> 0 AND d.resend < c.started THEN c.rstatus ELSE c.status END)`
	bulkDeliveriesQuery = `WITH c AS (SELECT * FROM jsonb_to_recordset(CAST(? AS jsonb))
			AS c(id text, endpoint text, event text, owner text, lease bigint, status text, next bigint, code int, updated bigint,
				started bigint, rstatus text, rnext bigint)),
		e AS (SELECT e.id, e.enabled FROM endpoints e WHERE e.id IN (SELECT c.endpoint FROM c) FOR KEY SHARE),
		v AS (SELECT v.id FROM events v WHERE v.id IN (SELECT c.event FROM c) FOR KEY SHARE)
		UPDATE deliveries d SET status = CASE WHEN d.resend >= c.started OR ` + bulkStatus + ` = 'pending' OR d.recover_at <> 0 AND ` + bulkStatus + ` = 'failed'
				THEN CASE WHEN e.enabled = 0 THEN 'paused' ELSE 'pending' END
			ELSE ` + bulkStatus + ` END,
			attempts = CASE WHEN d.resend >= c.started OR d.recover_at <> 0 AND ` + bulkStatus + ` = 'failed' THEN 0 ELSE d.attempts + 1 END,
			next_attempt = CASE WHEN d.resend >= c.started THEN d.resend WHEN d.recover_at <> 0 AND ` + bulkStatus + ` = 'failed' THEN d.recover_at
				WHEN d.resend <> 0 THEN c.rnext ELSE c.next END,
			resend = 0, recover_at = 0, lease_owner = '', lease_until = 0, last_code = c.code, updated = c.updated
		FROM c JOIN e ON e.id = c.endpoint JOIN v ON v.id = c.event
		WHERE d.id = c.id AND d.endpoint_id = e.id AND d.event_id = v.id AND d.lease_owner = c.owner AND (c.lease = 0 OR d.lease_until = c.lease) RETURNING d.id, d.attempts, d.status`
	bulkAttemptsQuery = `INSERT INTO attempts (id, delivery_id, event_id, endpoint_id, started, duration, status_code, error, response, outcome)
		SELECT a.id, a.delivery_id, a.event_id, a.endpoint_id, a.started, a.duration, a.status_code, a.error, decode(a.response, 'base64'), a.outcome
		FROM jsonb_to_recordset(CAST(? AS jsonb)) AS a(id text, delivery_id text, event_id text, endpoint_id text, started bigint,
			duration bigint, status_code int, error text, response text, outcome text)`
)

// completeBulk records cs (bulkable) in tx: the deliveries whose lease
// the owner still holds in one statement, their attempts in another, and
// the endpoints' health as it changes within the batch. It sets each
// completion's LeaseLost and returns how many were.
func (s *sqlStore) completeBulk(ctx context.Context, tx *sql.Tx, cs []*Completion) (int, error) {
	ds := make([]bulkDelivery, len(cs))
	for i, c := range cs {
		a := &c.Attempt
		ds[i] = bulkDelivery{ID: a.DeliveryID, Endpoint: a.EndpointID, Event: a.EventID, Owner: c.Owner, Lease: nanos(c.LeaseUntil), Status: c.Status, Next: nanos(c.NextAttempt), Code: a.StatusCode,
			Updated: nanos(a.Started.Add(a.Duration)), Started: c.leaseStarted()}
		rs, rn := c.resent()
		ds[i].RStatus, ds[i].RNext = rs, nanos(rn)
	}
	dj, err := json.Marshal(ds)
	if err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, s.d.rebind(bulkDeliveriesQuery), string(dj))
	if err != nil {
		return 0, err
	}
	// The deliveries recorded, with their attempts (none when a Resend
	// started a new schedule: see completeDeliveryQuery) and status.
	held, err := scanRecorded(rows)
	if err != nil {
		return 0, err
	}
	var as []bulkAttempt
	lost := 0
	health := map[string]bool{}
	for _, c := range cs {
		a := &c.Attempt
		r, ok := held[a.DeliveryID]
		c.LeaseLost, c.Resent, c.Failed = !ok, ok && r.attempts == 0, ok && r.status == StatusFailed
		if c.LeaseLost {
			lost++
			continue
		}
		as = append(as, bulkAttempt{ID: a.ID, DeliveryID: a.DeliveryID, EventID: a.EventID, EndpointID: a.EndpointID, Started: nanos(a.Started),
			Duration: int64(a.Duration), StatusCode: a.StatusCode, Error: storedText(a.Error), Response: nonNil(a.Response), Outcome: c.Status})
		if err := s.writeHealth(ctx, tx, c, health); err != nil {
			return 0, err
		}
	}
	if len(as) == 0 {
		return lost, nil
	}
	aj, err := json.Marshal(as)
	if err != nil {
		return 0, err
	}
	_, err = s.exec(ctx, tx, bulkAttemptsQuery, string(aj))
	return lost, err
}

// recorded is a delivery as a completion left it.
type recorded struct {
	attempts int
	status   string
}

// scanRecorded reads and closes rows of (delivery id, attempts, status).
func scanRecorded(rows *sql.Rows) (map[string]recorded, error) {
	defer rows.Close()
	m := map[string]recorded{}
	for rows.Next() {
		var (
			id string
			r  recorded
		)
		if err := rows.Scan(&id, &r.attempts, &r.status); err != nil {
			return nil, err
		}
		m[id] = r
	}
	return m, rows.Err()
}

// writeHealth writes the endpoint's health after c (FailingSince cleared
// or set), unless health (what tx already wrote for each endpoint) says
// it would change nothing.
func (s *sqlStore) writeHealth(ctx context.Context, tx *sql.Tx, c *Completion, health map[string]bool) error {
	a := &c.Attempt
	if ok, seen := health[a.EndpointID]; seen && ok == c.EndpointOK {
		return nil
	}
	var err error
	if c.EndpointOK {
		_, err = s.execHot(ctx, tx, endpointOKQuery, a.EndpointID)
	} else {
		_, err = s.execHot(ctx, tx, endpointFailingQuery, nanos(a.Started), a.EndpointID)
	}
	if err == nil {
		health[a.EndpointID] = c.EndpointOK
	}
	return err
}
