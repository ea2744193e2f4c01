package transport

import "strings"

// Semantics is the set of delivery guarantees a transport declares.
// The conformance suite (package transporttest) checks every flag a
// transport claims.
type Semantics uint32

const (
	// Ordered: per stream, messages arrive in increasing sequence order.
	Ordered Semantics = 1 << iota
	// GapReports: every message that will never arrive is covered by a
	// Gap event; loss is never silent.
	GapReports
	// Retransmit: loss is repaired within a bounded retransmit window;
	// what falls outside it is reported as a Gap.
	Retransmit
	// Deduplicated: no message is delivered twice.
	Deduplicated
	// Durable: acknowledged messages survive a crash of the publisher and
	// of the transport's own processes.
	Durable
	// Replay: a subscriber can start from an earlier offset or time.
	Replay
	// AtLeastOnce: the subscriber implements Acknowledger, and what the
	// application has not acknowledged when it stops is delivered again.
	AtLeastOnce
)

var semanticsNames = []struct {
	flag Semantics
	name string
}{
	{Ordered, "ordered"},
	{GapReports, "gap-reports"},
	{Retransmit, "retransmit"},
	{Deduplicated, "deduplicated"},
	{Durable, "durable"},
	{Replay, "replay"},
	{AtLeastOnce, "at-least-once"},
}

// Has reports whether s includes every flag in f.
func (s Semantics) Has(f Semantics) bool { return s&f == f }

// String lists the flags, for example "ordered|gap-reports|retransmit".
func (s Semantics) String() string {
	var names []string
	for _, n := range semanticsNames {
		if s.Has(n.flag) {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}
