// Package dispatch delivers the events of a webhook store to their
// endpoints: at least once, from the durable outbox, signed per Standard
// Webhooks with the same webhook-id on every attempt and a fresh
// timestamp and signature each time.
//
// The decisions are a pure function (Policy.Decide) of the clock, the
// attempt number, the response and a random number: the retry schedule
// (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h by default) with
// ±20% jitter, Retry-After (a later retry, never an earlier one), only 2xx
// as success, 3xx as a failure (never followed), 410 Gone disabling the
// endpoint, and disabling an endpoint that has failed for longer than
// DisableAfter. An endpoint's deliveries a dispatcher claimed ahead are
// not attempted once one of its attempts disables it, nor, within about
// a second, once its user disables it through the API or the console:
// they are paused with its others, and delivered when it is enabled
// again. Those still held a second after their user changed the endpoint
// (its URL, its secrets) are sent to it as it is now.
//
// A Dispatcher claims due deliveries from the store, leasing them, and
// runs each attempt in its own goroutine. Endpoints are isolated: each
// has at most Concurrency attempts in flight and its own rate limit, and
// a claim skips endpoints that are full, so an endpoint that hangs until
// the timeout holds only its own slots while the others' deliveries go
// on. An endpoint's rate limit is its own, not each dispatcher's: its
// slots (a generic cell rate, one second's worth saved up) are kept in
// the store (Store.TakeRateSlots), by the database server's clock on
// PostgreSQL, so it holds however many dispatchers share the database.
// A rate-limited endpoint has nothing claimed ahead of its workers: a
// claim takes no more of it than its free workers, and a slot for each,
// one call to the store per rate-limited endpoint in a claim (none for
// the others), and each attempt starts at once with its slot, so the
// endpoint gets no more than its rate when slow attempts end (none
// queued behind them holds a slot taken long before); the others of the
// claim are released, pending, and the endpoint is skipped until its
// next slot frees (a store error taking them: PollInterval). The slots
// taken for deliveries the dispatcher then cannot hold (MaxInFlightBytes
// reached) are given back (Store.ReturnRateSlots), so the endpoint
// still gets its rate. Its backlog
// waits in the database, not in memory. A dispatcher
// killed mid-attempt loses nothing: its leases expire and the
// deliveries are claimed again. A record of attempts the store fails to
// write (a database restarting) is written again while its leases hold.
// Events older than Config.Retention (90 days, as Svix keeps payloads)
// are deleted with their deliveries and attempts, so the outbox does not
// grow without bound.
//
// Notify wakes a dispatcher at once (the API calls it when an event is
// stored, a delivery resent or recovered, an endpoint enabled); a
// delivery resent (or recovered) while its attempt ran wakes it when
// that attempt is recorded. Otherwise it looks for due deliveries every PollInterval,
// and when the next one it knows of is due.
package dispatch
