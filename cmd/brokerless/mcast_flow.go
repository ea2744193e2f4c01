package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
)

// flowFlags are mcast pub's flow-control flags.
type flowFlags struct {
	mode    string
	tag     uint64
	min     int
	timeout time.Duration
}

func (f *flowFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.mode, "flow", "none", "flow control: none (go at our own pace; a subscriber left behind gets a gap), min (never pass the slowest subscriber) or tagged (the slowest of those with --flow-tag)")
	fs.Uint64Var(&f.tag, "flow-tag", 0, "with --flow tagged: the tag of the subscribers to wait for (they report it: mcast:// URL flow-tag=N)")
	fs.IntVar(&f.min, "flow-min", 0, "with flow control: publish nothing until this many subscribers report")
	fs.DurationVar(&f.timeout, "flow-timeout", reliable.DefaultReceiverTimeout, "with flow control: stop waiting for a subscriber silent this long")
}

// apply checks the flags and sets cfg's flow control.
func (f *flowFlags) apply(cfg *multicast.Config, changed func(string) bool) error {
	fc := &cfg.Sender.Flow
	switch f.mode {
	case "none":
		for _, name := range []string{"flow-tag", "flow-min", "flow-timeout"} {
			if changed(name) {
				return usagef("--%s needs --flow min or --flow tagged", name)
			}
		}
		return nil
	case "min":
		fc.Mode = reliable.FlowMin
	case "tagged":
		fc.Mode = reliable.FlowTagged
		if f.tag == 0 {
			return usagef("--flow tagged needs --flow-tag N (N ≥ 1), the tag of the subscribers to wait for")
		}
	default:
		return usagef("--flow %q: want none, min or tagged", f.mode)
	}
	if f.min < 0 {
		return usagef("--flow-min %d is negative", f.min)
	}
	if f.timeout <= 0 {
		return usagef("--flow-timeout %v: must be > 0", f.timeout)
	}
	fc.Tag, fc.MinReceivers, fc.ReceiverTimeout = f.tag, f.min, f.timeout
	return nil
}

// flowWait says, for the start line, that the publisher holds its first
// message until --flow-min subscribers report: without it a publisher
// run alone would print where it publishes and then nothing.
func flowWait(fc reliable.FlowConfig) string {
	if fc.Mode == reliable.FlowNone || fc.MinReceivers == 0 {
		return ""
	}
	which := "subscribers"
	if fc.MinReceivers == 1 {
		which = "subscriber"
	}
	if fc.Mode == reliable.FlowTagged {
		which += fmt.Sprintf(" with flow-tag %d", fc.Tag)
	}
	return fmt.Sprintf("; waiting for %d %s to report before the first message", fc.MinReceivers, which)
}

// writeFlowStats prints what flow control did, when it did anything:
// subscribers send STATUS whatever the publisher's mode, so STATUS
// received alone says nothing about flow control.
func writeFlowStats(w io.Writer, s multicast.PublisherStats) {
	if s.FlowHeld+s.FlowReceivers+s.FlowTimeouts+s.FlowReceiversFull+s.ReceiversLeft == 0 {
		return
	}
	fmt.Fprintf(w, "; flow control: held %d times, subscribers reporting %d, timed out %d, left %d",
		s.FlowHeld, s.FlowReceivers, s.FlowTimeouts, s.ReceiversLeft)
	if s.StatusAfterLeave > 0 {
		fmt.Fprintf(w, " (reports that came after their leave ignored %d)", s.StatusAfterLeave)
	}
	if s.FlowReceiversFull > 0 {
		fmt.Fprintf(w, ", too many subscribers %d", s.FlowReceiversFull)
	}
}
