package main

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/brokerless/brokerless/transport"
)

// appendLine appends m as one output line of mcast sub,
// "<seq> <topic> <payload>\n": the topic is "-" when empty, the payload
// text when it is printable UTF-8 and hexadecimal otherwise.
func appendLine(b []byte, m *transport.Message) []byte {
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, ' ')
	if m.Topic == "" {
		b = append(b, '-')
	} else {
		b = append(b, m.Topic...)
	}
	b = append(b, ' ')
	if printable(m.Payload) {
		b = append(b, m.Payload...)
	} else {
		b = hex.AppendEncode(b, m.Payload)
	}
	return append(b, '\n')
}

// printable reports whether p is valid UTF-8 of printable characters
// (spaces included, tabs and line breaks not), so it prints as one line.
func printable(p []byte) bool {
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size <= 1 || !unicode.IsPrint(r) {
			return false
		}
		p = p[size:]
	}
	return true
}

// describe formats a gap, stream start or stream end as one line for
// standard error.
func describe(ev *transport.Event) string {
	switch ev.Kind {
	case transport.EventGap:
		return ev.Gap.String()
	case transport.EventStreamStart:
		s := ev.Start
		line := fmt.Sprintf("stream start %s at seq %d", s.Stream, s.FirstSeq)
		if !s.Replaces.IsZero() {
			line += fmt.Sprintf(", replaces %s (publisher restarted)", s.Replaces)
		}
		return line
	case transport.EventStreamEnd:
		e := ev.End
		return fmt.Sprintf("stream end %s after seq %d: %s", e.Stream, e.LastSeq, e.Reason)
	}
	return ev.Kind.String()
}
