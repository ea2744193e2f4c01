package statsd

import "bytes"

// batch is what one reading goroutine parsed and has yet to hand to the
// aggregator: parsing happens outside the aggregator's lock, adding
// inside it.
type batch struct {
	p       Parser
	metrics []Metric
	packets int
	lines   int
	seq     int
	// events and checks are DogStatsD events and service checks:
	// counted, not metrics; they are in lines too (metrics_received:
	// every line but sequence lines).
	events int
	checks int
	bad    int
	// badLine keeps the first bad line of the batch for the log.
	badLine []byte
	badWhy  Reason
	// keep, if above 0, is the most metrics the batch keeps room for
	// after a packet: a burst's memory goes back (newConnBatch).
	keep int
}

const maxLoggedLine = 256

// batchMetrics is the room for metrics a batch starts with, and
// keepBatchMetrics the most a TCP connection's batch keeps from one
// read to the next.
const (
	batchMetrics     = 1024
	keepBatchMetrics = 4096
)

func newBatch(noSanitize bool) *batch {
	return &batch{p: Parser{NoSanitize: noSanitize}, metrics: make([]Metric, 0, batchMetrics),
		badLine: make([]byte, 0, maxLoggedLine)}
}

// newConnBatch is the batch of a TCP connection, which holds it while
// open: MaxConns of them must not each keep the room that one line of
// packed values took (64 KiB of "t:1:1:...|ms", 3 MB of metrics).
func newConnBatch(noSanitize bool) *batch {
	b := newBatch(noSanitize)
	b.keep = keepBatchMetrics
	return b
}

// addPacket parses the lines of one packet.
func (b *batch) addPacket(pkt []byte) {
	b.packets++
	for len(pkt) > 0 {
		var line []byte
		if i := bytes.IndexByte(pkt, '\n'); i >= 0 {
			line, pkt = pkt[:i], pkt[i+1:]
		} else {
			line, pkt = pkt, nil
		}
		if len(line) > 0 {
			b.addLine(line)
		}
	}
}

func (b *batch) addLine(line []byte) {
	var bad int
	var why Reason
	b.metrics, bad, why = b.p.AppendLine(b.metrics, line)
	if why == ReasonNone && line[0] == '_' {
		// Not metrics: counted apart, as SeqLines, EventsIgnored and
		// ServiceChecksIgnored. An event or a service check is still
		// a line received (metrics_received), as Etsy counts every
		// line there.
		switch {
		case IsSeqLine(line):
			b.seq++
			return
		case IsEvent(line):
			b.events++
		case IsServiceCheck(line):
			b.checks++
		}
	}
	b.lines++
	if bad > 0 {
		b.addBad(bad, why, line)
	}
}

// addTooLong counts a line too long to keep as one bad line; start is
// its beginning, for the log.
func (b *batch) addTooLong(start []byte) {
	b.lines++
	b.addBad(1, ReasonLineTooLong, start)
}

// addBad counts bad values and keeps the first bad line for the log.
func (b *batch) addBad(n int, why Reason, line []byte) {
	if b.bad == 0 {
		b.badWhy = why
		b.badLine = append(b.badLine[:0], line[:min(len(line), maxLoggedLine)]...)
	}
	b.bad += n
}

func (b *batch) empty() bool { return b.packets == 0 && b.lines == 0 && b.bad == 0 } // events and checks are in lines

// applyTo adds the batch to a and empties it.
func (b *batch) applyTo(a *Aggregator) {
	a.CountPacket(b.packets, b.lines, b.bad)
	a.CountIgnored(b.events, b.checks)
	for i := range b.metrics {
		a.Add(&b.metrics[i])
	}
	b.reset()
}

func (b *batch) reset() {
	b.p.Reset()
	if b.keep > 0 && cap(b.metrics) > b.keep {
		b.metrics = make([]Metric, 0, batchMetrics)
	} else {
		clear(b.metrics) // drop references to the packets
		b.metrics = b.metrics[:0]
	}
	b.packets, b.lines, b.seq, b.events, b.checks, b.bad = 0, 0, 0, 0, 0, 0
}
