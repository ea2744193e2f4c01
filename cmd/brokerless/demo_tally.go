package main

import (
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// tally counts what one demo subscriber received and checks the
// transport's promise: every sequence number arrives once and in order,
// as a message or inside a gap.
type tally struct {
	delivered uint64
	gaps      uint64
	lostSeqs  uint64 // sequence numbers the gaps cover
	disorder  uint64 // messages or gaps that did not follow on from the previous one
	ended     bool   // the stream ended: nothing more will come
	next      uint64 // the sequence number due next; 0 before the stream starts
	lat       *latency.Histogram
	firstGaps []string // the first maxGapLines gaps, described
}

// maxGapLines bounds the gaps a tally describes.
const maxGapLines = 3

func newTally() tally { return tally{lat: latency.New()} }

// add counts ev, received at now.
func (t *tally) add(ev *transport.Event, now time.Time) {
	switch ev.Kind {
	case transport.EventStreamStart:
		t.next = ev.Start.FirstSeq
	case transport.EventMessage:
		t.delivered++
		t.lat.Record(now.Sub(ev.Message.Time))
		t.follow(ev.Message.Seq, ev.Message.Seq)
	case transport.EventGap:
		t.gaps++
		t.lostSeqs += ev.Gap.Len()
		if len(t.firstGaps) < maxGapLines {
			t.firstGaps = append(t.firstGaps, ev.Gap.String())
		}
		t.follow(ev.Gap.From, ev.Gap.To)
	case transport.EventStreamEnd:
		t.ended = true
	}
}

func (t *tally) follow(from, to uint64) {
	if t.next != 0 && from != t.next {
		t.disorder++
	}
	t.next = to + 1
}

// complete reports whether nothing more is to come of a stream of
// published single-frame messages: each is delivered or in a gap, or
// the stream ended.
func (t *tally) complete(published uint64) bool {
	return t.ended || t.delivered+t.lostSeqs >= published
}
