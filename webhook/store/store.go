package store

import (
	"context"
	"errors"
	"time"
)

// Errors.
var (
	// ErrNotFound is a missing endpoint, event, delivery or token.
	ErrNotFound = errors.New("store: not found")
	// ErrLeaseLost is a completion from an owner whose lease expired and
	// was taken by another claim.
	ErrLeaseLost = errors.New("store: lease lost")
	// ErrBadAddress is a database address Open does not understand.
	ErrBadAddress = errors.New("store: bad database address")
	// ErrConflict is an UpdateEndpoint of an endpoint changed since it
	// was read (its Revision is no longer the row's).
	ErrConflict = errors.New("store: endpoint changed since it was read")
)

// Store is the dispatcher's durable state. Every method is safe for
// concurrent use.
type Store interface {
	CreateEndpoint(ctx context.Context, e *Endpoint) error
	GetEndpoint(ctx context.Context, id string) (*Endpoint, error)
	ListEndpoints(ctx context.Context) ([]*Endpoint, error)
	// UpdateEndpoint writes every field but ID, Created and Revision,
	// when e.Revision (unless zero) is still the stored endpoint's:
	// otherwise it writes nothing and returns an error wrapping
	// ErrConflict. It sets e.Revision to the new revision. Disabling an
	// endpoint pauses its pending deliveries; enabling it makes them
	// pending again. Completions of attempts to it recorded meanwhile
	// neither fail it nor are failed by it.
	UpdateEndpoint(ctx context.Context, e *Endpoint) error
	// ChangeEndpoint reads endpoint id, applies f to it and writes it
	// (as UpdateEndpoint does), in one transaction that no other write
	// to the endpoint interleaves with: what others write is never
	// undone, and never makes it fail. An error from f writes nothing
	// and is returned. f must not block, nor use the store, and may be
	// called again (the transaction run again, killed as a deadlock's
	// victim): it sets what it returns from scratch. It returns the
	// endpoint as written.
	ChangeEndpoint(ctx context.Context, id string, f func(e *Endpoint) error) (*Endpoint, error)
	// DeleteEndpoint removes the endpoint, its deliveries and their
	// attempts. Completions of attempts to it recorded meanwhile do not
	// fail it: each is either recorded first and deleted with the rest,
	// or refused (its LeaseLost set).
	DeleteEndpoint(ctx context.Context, id string) error

	// InsertEvent stores ev and one pending delivery, due at ev.Created,
	// for each enabled endpoint whose filter accepts its type (or only
	// for the endpoints listed in targets, when given). When an event with
	// the same IdempotencyKey exists, it fills ev with that event and
	// returns created false.
	InsertEvent(ctx context.Context, ev *Event, targets ...string) (created bool, err error)
	GetEvent(ctx context.Context, id string) (*Event, error)
	// ListEvents returns up to limit events, newest first (by creation
	// time, then by id, the highest first), those that come after the
	// event created at before with id beforeID in that order: created
	// before before, or at before with an id below beforeID. With before
	// zero, from the newest; with beforeID empty, those created before
	// before. The next page of a listing starts after its last event
	// (its Created and ID): many events can share one creation time.
	ListEvents(ctx context.Context, before time.Time, beforeID string, limit int) ([]*Event, error)
	ListDeliveries(ctx context.Context, eventID string) ([]*Delivery, error)
	ListAttempts(ctx context.Context, eventID string) ([]*Attempt, error)
	// Resend makes the event's deliveries (to endpointID only, if given)
	// pending and due at now, creating the delivery to endpointID if it
	// has none; it returns how many deliveries it scheduled. A delivery
	// whose attempt is under way (leased) is attempted again after it,
	// whatever its result: its completion leaves the delivery pending, due
	// at now, with no attempts (a new schedule), and has its Resent set;
	// one leased but whose attempt had not started yet (claimed ahead,
	// queued: its start is after the resend, both by the leases' clock,
	// the server's on PostgreSQL, where the resend's time is the
	// server's, not now) is attempted once, that attempt the first of the
	// new schedule (see Completion.ResentStatus and LeaseStarted).
	Resend(ctx context.Context, eventID, endpointID string, now time.Time) (int, error)
	// Recover makes pending again, due at now, every failed delivery to
	// the endpoint whose event was created in [since, until), and returns
	// how many. A delivery in that window whose attempt is under way
	// (leased) is covered too, should that attempt fail for good: its
	// completion then leaves it pending, due at now, with no attempts (and
	// has its Resent set); one that succeeds, or leaves retries, stands.
	Recover(ctx context.Context, endpointID string, since, until, now time.Time) (int, error)

	// Claim leases due deliveries of enabled endpoints, the earliest
	// due first (due by r.Now). A lease runs for r.Lease from r.Now on
	// SQLite, from the server's clock on PostgreSQL (whose leases
	// dispatchers with skewed clocks share); Job.LeaseUntil is its end,
	// by that clock. On SQLite leases, like completions, are written with
	// relaxed durability: a lease lost to a power failure is harmless, the
	// dispatcher that held it having stopped too. On PostgreSQL, which
	// several dispatchers share and whose server can crash alone, a claim
	// commits with full durability: a lost lease would let another
	// dispatcher attempt a delivery whose attempt is still running.
	Claim(ctx context.Context, r ClaimRequest) ([]*Job, error)
	// Release gives back leases without an attempt.
	Release(ctx context.Context, owner string, deliveryIDs []string) error
	// Complete records attempts and their deliveries' new states, and
	// releases the leases, all in one transaction. A completion whose
	// owner no longer holds the lease (with a LeaseUntil, that lease: not
	// one it took again after it expired) is not recorded: its LeaseLost is
	// set, and the error wraps ErrLeaseLost once the others are committed.
	// A completion's durability may be relaxed (SQLite synchronous=NORMAL,
	// PostgreSQL synchronous_commit off): one lost to a power failure is
	// attempted again, which at-least-once allows; events are always
	// stored with full durability. A delivery a completion leaves pending
	// is paused if its endpoint was disabled meanwhile.
	Complete(ctx context.Context, cs ...*Completion) error
	// NextDue returns when the earliest pending delivery of an enabled
	// endpoint not in skip becomes claimable (ok false when there is
	// none). Of each endpoint it reads the deliveries due up to its first
	// unleased one, so its cost is that of the leased deliveries, not of
	// a backlog waiting for its retries; a dispatcher skips the endpoints
	// whose backlog it is working through (due, and leased as it claims).
	// (On PostgreSQL a lease's end is by the server's clock: a dispatcher
	// whose clock differs wakes early or late for it, by the skew, within
	// its poll interval.)
	NextDue(ctx context.Context, skip ...string) (t time.Time, ok bool, err error)

	// TakeRateSlots takes up to n of the slots of endpoint id's rate
	// limit (rate deliveries a second, one second's worth saved up: a
	// generic cell rate, its theoretical arrival time in the endpoint's
	// row), which every dispatcher on the store shares, so the limit
	// holds however many there are. It returns how many it took and,
	// when fewer than n, when the next one frees (by now's clock). The
	// slots are measured by now on SQLite, by the server's clock on
	// PostgreSQL (as leases are: dispatchers with skewed clocks do not
	// multiply the rate), the wait it returns added to now. An error
	// wrapping ErrNotFound if the endpoint is gone.
	TakeRateSlots(ctx context.Context, id string, rate, n int, now time.Time) (took int, next time.Time, err error)

	// ReturnRateSlots gives back n slots of endpoint id's rate limit
	// that TakeRateSlots gave and no attempt used (a dispatcher taking
	// slots for deliveries it then could not hold): its theoretical
	// arrival time moves back by n slots at rate, never before now (by
	// the clock TakeRateSlots measures with), so the endpoint gets its
	// rate. Only slots still ahead of the clock are to be given back: one
	// past may have been forgotten (a take finding the endpoint idle
	// restarts from now), and moved back, the slots taken since would
	// let more than the rate through; a caller whose clock stepped back
	// since the take cannot tell which are, and gives back none. An
	// endpoint gone is no error.
	ReturnRateSlots(ctx context.Context, id string, rate, n int, now time.Time) error

	// Purge deletes up to limit events created before before, the
	// oldest first, with their deliveries and attempts, but not an event
	// with a delivery still pending (being attempted or waiting for a
	// retry), nor one a Resend or Recover is making pending at the same
	// time (that one finds it deleted, or it stays); it returns how many
	// it deleted. An attempt recorded meanwhile to a delivery not pending
	// (its endpoint disabled) does not fail it: the completion is
	// recorded first, or refused (its LeaseLost set). A deleted event's
	// idempotency key is free again. Dispatchers sharing PostgreSQL purge
	// at once without waiting for each other (SKIP LOCKED).
	Purge(ctx context.Context, before time.Time, limit int) (int, error)

	CreateToken(ctx context.Context, t *Token) error
	// CreateFirstToken stores t only when the store holds no token at
	// all, atomically: of dispatchers starting together on one new
	// database, exactly one creates its token (created true).
	CreateFirstToken(ctx context.Context, t *Token) (created bool, err error)
	// TokenByHash returns the unrevoked token with this hash.
	TokenByHash(ctx context.Context, hash []byte) (*Token, error)
	ListTokens(ctx context.Context) ([]*Token, error)
	RevokeToken(ctx context.Context, id string, now time.Time) error

	Close() error
}
