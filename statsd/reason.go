package statsd

import "strconv"

// Reason says why a line, or one value of it, was rejected.
type Reason uint8

// Reasons for bad lines.
const (
	ReasonNone Reason = iota
	ReasonNoColon
	ReasonEmptyName
	ReasonKeyTooLong
	ReasonNoType
	ReasonUnknownType
	ReasonBadValue
	ReasonNegativeTimer
	ReasonBadRate
	ReasonBadField
	ReasonBadTags
	ReasonBadSeq
	ReasonLineTooLong
	ReasonBadEvent
	ReasonBadServiceCheck
	ReasonRateTooSmall
	ReasonCounterOverflow
)

var reasonText = [...]string{
	ReasonNone:            "no error",
	ReasonNoColon:         "no ':' after the name",
	ReasonEmptyName:       "empty name",
	ReasonKeyTooLong:      "key too long",
	ReasonNoType:          "missing |type",
	ReasonUnknownType:     "unknown metric type",
	ReasonBadValue:        "value is not a decimal number",
	ReasonNegativeTimer:   "negative timer value",
	ReasonBadRate:         "bad sample rate",
	ReasonBadField:        "unknown |field",
	ReasonBadTags:         "too many tags",
	ReasonBadSeq:          "malformed sequence line",
	ReasonLineTooLong:     "line too long",
	ReasonBadEvent:        "malformed DogStatsD event",
	ReasonBadServiceCheck: "malformed DogStatsD service check",
	ReasonRateTooSmall:    "sample rate too small: 1/rate is not finite",
	ReasonCounterOverflow: "counter value / sample rate is not finite",
}

func (r Reason) String() string {
	if int(r) < len(reasonText) {
		return reasonText[r]
	}
	return "unknown reason"
}

// LineError is a rejected line with the reason of its first bad value.
type LineError struct {
	Line   string
	Reason Reason
}

func (e *LineError) Error() string {
	return "statsd: bad line " + quoteLine(e.Line) + ": " + e.Reason.String()
}

func (e *LineError) Unwrap() error { return ErrBadLine }

// quoteLine quotes a line for a log, cut to its first 200 bytes.
func quoteLine(line string) string {
	const most = 200
	if len(line) > most {
		return strconv.Quote(line[:most]) + "…"
	}
	return strconv.Quote(line)
}
