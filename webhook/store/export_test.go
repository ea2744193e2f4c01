package store

// LeaseByClaimClock makes s (opened on PostgreSQL) measure leases (and
// rate-limit slots) by the claims' Now, as on SQLite, rather than by the
// database's clock, for the tests that expire leases by moving an
// injected clock.
func LeaseByClaimClock(s Store) Store {
	s.(*sqlStore).leaseByDB = false
	return s
}
