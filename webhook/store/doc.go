// Package store is the webhook dispatcher's durable state: endpoints,
// events (the outbox), deliveries with their attempts, and API tokens.
//
// One implementation of Store runs on database/sql with two dialects:
// SQLite (modernc.org/sqlite, pure Go, one file, the default) and
// PostgreSQL (github.com/jackc/pgx/v5), for several dispatchers sharing
// one database. Open picks the dialect from the address ("sqlite:PATH" or
// "postgres://…"). Both pass the suite in package storetest.
//
// An event and its deliveries (one per matching, enabled endpoint) are
// written in one transaction: once InsertEvent returns, the event is
// delivered at least once, whatever happens to the process. The
// deliveries are inserted in one statement, however many endpoints take
// the event; the endpoints' filters are decoded once and kept until an
// endpoint changes (a version every change raises, in whichever process
// makes it). Dispatchers
// take due deliveries with Claim, which leases them to one owner until
// the lease expires: on PostgreSQL with SELECT … FOR UPDATE SKIP LOCKED,
// so dispatchers on one database never hold the same delivery at once;
// on SQLite every write goes through one connection. A dispatcher that
// dies holding a lease loses it when it expires, and another (or its own
// restart) claims the delivery again, with the same event id. On
// PostgreSQL a lease is measured by the server's clock (now()), not by
// the claimer's: a dispatcher whose clock runs ahead does not find
// another's leases expired early. What is due is decided by the
// claimer's clock (ClaimRequest.Now) on both.
//
// An endpoint's rate limit is kept in its row (TakeRateSlots: a generic
// cell rate's theoretical arrival time, moved under the row's lock;
// ReturnRateSlots moves it back for slots unused), so that dispatchers
// sharing the database share it; on PostgreSQL by the server's clock,
// as leases are.
//
// On PostgreSQL a transaction killed as a deadlock's victim (40P01) or
// a serialization failure (40001) is run again, a few times at most,
// not once its context is done. The store's transactions take their
// locks in a common order (an endpoint's row before its deliveries,
// deliveries in id order, before their attempts), but another client of
// the database, or an order missed, must not fail a user's request that
// would succeed a moment later.
//
// Times are stored as Unix nanoseconds (0 for none) and booleans as
// integers, so the two dialects share their queries.
package store
