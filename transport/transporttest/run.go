package transporttest

import "testing"

// Run runs the conformance suite against the transport h makes pairs
// of, one subtest per property, each on a fresh pair. Subtests whose
// claim the transport does not make, or whose faults the harness cannot
// inject, are skipped. Run must not run in parallel with other tests of
// the package: NoGoroutineLeak counts every goroutine of the process.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if err := h.validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"Semantics", testSemantics},
		{"Ordering", testOrdering},
		{"Accounting", testAccounting},
		{"Loss", testLoss},
		{"GapReports", testGapReports},
		{"LargeMessage", testLargeMessage},
		{"ConcurrentPublish", testConcurrentPublish},
		{"Restart", testRestart},
		{"Durable", testDurable},
		{"Replay", testReplay},
		{"AtLeastOnce", testAtLeastOnce},
		{"DefaultTime", testDefaultTime},
		{"CloseUnblocksReceive", testCloseUnblocksReceive},
		{"ClosePublisher", testClosePublisher},
		{"ContextCancel", testContextCancel},
		{"NoGoroutineLeak", testNoGoroutineLeak},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, h) })
	}
}
