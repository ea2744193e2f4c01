package store

// NoRetry makes s (opened on PostgreSQL) run each transaction once,
// not again when killed as a deadlock's victim (see retry): the tests
// of the stores' lock orders see every deadlock.
func NoRetry(s Store) Store {
	s.(*sqlStore).tries = 1
	return s
}

// LeaseByClaimClock makes s (opened on PostgreSQL) measure leases (and
// rate-limit slots) by the claims' Now, as on SQLite, rather than by the
// database's clock, for the tests that expire leases by moving an
// injected clock.
func LeaseByClaimClock(s Store) Store {
	s.(*sqlStore).leaseByDB = false
	return s
}
