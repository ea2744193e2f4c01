package transporttest_test

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

const reliable = transport.Ordered | transport.GapReports | transport.Retransmit | transport.Deduplicated

// TestRunRetransmit runs the suite against a fake that claims what the
// multicast transport will and repairs every loss the harness injects.
func TestRunRetransmit(t *testing.T) {
	transporttest.Run(t, fakeOptions{sem: reliable, faults: true}.harness())
}

// TestRunAtMostOnce runs the suite against a fake that loses what the
// harness asks it to and reports every loss as a gap.
func TestRunAtMostOnce(t *testing.T) {
	sem := transport.Ordered | transport.GapReports | transport.Deduplicated
	transporttest.Run(t, fakeOptions{sem: sem, faults: true}.harness())
}

// TestRunNoFaults runs the suite against a fake whose harness cannot
// inject faults: the tests that need them are skipped.
func TestRunNoFaults(t *testing.T) {
	transporttest.Run(t, fakeOptions{sem: reliable}.harness())
}

// TestRunLog runs the suite against a fake log that keeps what was
// flushed across a server restart and replays from any position.
func TestRunLog(t *testing.T) {
	transporttest.Run(t, fakeLogOptions{sem: logSemantics}.harness())
}
