package main

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"

	"github.com/brokerless/brokerless/multicast"
)

// subResult is one demo subscriber's outcome.
type subResult struct {
	profile demoProfile
	tally   tally
	stats   multicast.SubscriberStats
	err     error
}

func writeIntro(w io.Writer, o demoOptions, group netip.AddrPort, subs []*demoSub) {
	fmt.Fprintf(w, "demo: 1 publisher -> %d subscribers on %v via lo, TTL 0 (nothing leaves this host)\n", len(subs), group)
	fmt.Fprintf(w, "publishing %g ticks/s for %v; subscribers:", o.rate, o.duration)
	for i, s := range subs {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s (%s)", sep, s.profile.name, s.profile.about)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

// writeReport prints the table of subscribers, the publisher's totals
// and the verdict.
func writeReport(w io.Writer, r *demoResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "subscriber\tdropped\tdelivered\trecovered\tdup dropped\tNACKs sent\tsuppressed\tgaps\tlost\tp50\tp99\tp99.9\t")
	for _, s := range r.subs {
		t, st := &s.tally, s.stats.ReceiverStats
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%v\t%v\t\n",
			s.profile.name, s.stats.FilterDrops, t.delivered, st.Recovered, st.Duplicates,
			st.NacksSent, st.Suppressed, t.gaps, t.lostSeqs,
			short(t.lat.Quantile(0.5)), short(t.lat.Quantile(0.99)), short(t.lat.Quantile(0.999)))
	}
	tw.Flush()
	p := r.pub
	fmt.Fprintf(w, "\npublisher: %d messages in %d datagrams (%.1f per datagram), %d repairs, %d NCFs, %d NACKs received\n\n",
		r.published, p.Datagrams, perDatagram(p.Messages, p.Datagrams), p.Repairs, p.Ncfs, p.NacksReceived)
	if problems := r.problems(); len(problems) > 0 {
		fmt.Fprintf(w, "FAIL:\n  %s\n", strings.Join(problems, "\n  "))
		return
	}
	fmt.Fprintf(w, "OK: all %d subscribers delivered all %d messages, in order, with no gap.\n", len(r.subs), r.published)
}

// problems says, one line each, what kept the demo from delivering every
// message to every subscriber; none means success.
func (r *demoResult) problems() []string {
	var ps []string
	if r.published == 0 {
		ps = append(ps, "nothing was published")
	}
	for _, s := range r.subs {
		name, t := s.profile.name, &s.tally
		if s.err != nil {
			ps = append(ps, fmt.Sprintf("%s: receiving failed: %v", name, s.err))
		}
		if t.delivered != r.published {
			ps = append(ps, fmt.Sprintf("%s: delivered %d of %d messages", name, t.delivered, r.published))
		}
		if t.gaps > 0 {
			ps = append(ps, fmt.Sprintf("%s: %d gaps lost %d messages", name, t.gaps, t.lostSeqs))
			for _, g := range t.firstGaps {
				ps = append(ps, fmt.Sprintf("%s:   %s", name, g))
			}
		}
		if t.disorder > 0 {
			ps = append(ps, fmt.Sprintf("%s: %d messages or gaps out of sequence", name, t.disorder))
		}
	}
	return ps
}
