package transporttest

import (
	"errors"
	"fmt"
)

// ErrBadPayload is returned by PayloadIndex for bytes that Payload did
// not produce: corrupted, truncated or foreign.
var ErrBadPayload = errors.New("transporttest: bad payload")

// Violation is the first event in a recorded log that breaks a check.
type Violation struct {
	// Check names the checker: "ordered", "accounting", "exactly-once",
	// "delivered", "at-most-once", "loss-reported", "replayed",
	// "positions" or "redelivered"; or a check of the suite's own, such
	// as "restart".
	Check string
	// Event is the index in the log of the offending event, or -1 when
	// the violation is about something missing from the log.
	Event int
	// Reason says what is wrong.
	Reason string
}

func (v *Violation) Error() string {
	if v.Event < 0 {
		return fmt.Sprintf("transporttest: %s: %s", v.Check, v.Reason)
	}
	return fmt.Sprintf("transporttest: %s: event %d: %s", v.Check, v.Event, v.Reason)
}
