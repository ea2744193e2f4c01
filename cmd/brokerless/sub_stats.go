package main

import (
	"fmt"
	"time"

	"github.com/brokerless/brokerless/multicast"
)

// statsSample is what one line of sub --stats reports.
type statsSample struct {
	at        time.Time
	interval  time.Duration              // since the previous line
	delivered uint64                     // messages received by the application, in all
	fresh     uint64                     // of them, since the previous line
	gaps      uint64                     // gaps received, in all
	lost      uint64                     // sequence numbers they lost
	mcast     *multicast.SubscriberStats // a multicast subscriber's counters
	p50, p99  time.Duration              // publish-to-receive latency over the interval
}

// statsLine formats s as key=value pairs, counters since start except
// delivered/s and the latencies, which cover the interval. A multicast
// subscriber's line has its recovery counters, and its gaps as its
// engine counts them.
func statsLine(s statsSample) string {
	rate := 0.0
	if s.interval > 0 {
		rate = float64(s.fresh) / s.interval.Seconds()
	}
	if s.mcast != nil {
		r := s.mcast.ReceiverStats
		return fmt.Sprintf("%s delivered/s=%.0f delivered=%d recovered=%d duplicates=%d nacks=%d suppressed=%d gaps=%d lost=%d p50=%v p99=%v\n",
			s.at.Format("15:04:05"), rate, s.delivered, r.Recovered, r.Duplicates, r.NacksSent, r.Suppressed,
			r.Gaps, r.GapSeqs, short(s.p50), short(s.p99))
	}
	return fmt.Sprintf("%s delivered/s=%.0f delivered=%d gaps=%d lost=%d p50=%v p99=%v\n",
		s.at.Format("15:04:05"), rate, s.delivered, s.gaps, s.lost, short(s.p50), short(s.p99))
}

// short rounds d to three significant digits, so 1.234567ms prints as
// 1.23ms.
func short(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for v := d; v >= 1000; v /= 10 {
		unit *= 10
	}
	return d.Round(unit)
}
