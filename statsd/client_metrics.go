package statsd

import (
	"math"
	"strconv"
	"time"
)

// Metric calls. Tags are DogStatsD tags, "key:value" or "tag", sent
// after ClientConfig.Tags; passing them as arguments does not allocate.
// In names and set members ':', '|' and '\n' become '_', in tags ',',
// '|' and '\n' do, so a line can never be split or misread.
//
// A metric the brokerless server would refuse is dropped and counted
// (Stats) at the call instead: one with more than MaxTags (64) tags,
// ClientConfig.Tags included, whose key is longer than MaxKeyLen (1024
// bytes), or whose name, ClientConfig.Prefix included, the server's
// sanitizing would leave empty (an empty name, or one only of
// characters it drops, such as "%%" or "é"; only an empty one with
// ClientConfig.NoSanitize, for a server that keeps names as written).
// The key is measured as sent: ClientConfig.Prefix and the name, then
// one byte and the tag for each tag, ClientConfig.Tags included (the
// server's key, "name;k=v;…", is that long or shorter).

// Incr adds 1 to a counter.
func (c *Client) Incr(name string, tags ...string) { c.count(name, 1, 1, tags) }

// Count adds n to a counter, sending with probability rate (the server
// scales the count back up by 1/rate). A rate of 1 or more sends always.
func (c *Client) Count(name string, n int64, rate float64, tags ...string) {
	c.count(name, n, rate, tags)
}

// Gauge sets a gauge. A negative value is sent as "name:0|g" then
// "name:-v|g" in the same packet, since Etsy statsd reads a leading '-'
// as a decrement.
func (c *Client) Gauge(name string, v float64, tags ...string) {
	c.gauge(name, v, v < 0, false, tags)
}

// GaugeDelta adds delta, positive or negative, to a gauge.
func (c *Client) GaugeDelta(name string, delta float64, tags ...string) {
	c.gauge(name, delta, false, true, tags)
}

// Timing records a duration, sent in milliseconds. A negative duration
// is dropped and counted: Etsy statsd and the brokerless server reject a
// negative timer value.
func (c *Client) Timing(name string, d time.Duration, tags ...string) {
	c.timing(name, d, 1, tags)
}

// Histogram records a value of a DogStatsD histogram ("h"): a timer to
// the brokerless server, but Etsy statsd 0.9.0 adds any type it does not
// know to a counter, so send durations to Etsy with Timing.
func (c *Client) Histogram(name string, v float64, tags ...string) {
	c.value(name, v, "h", 1, tags)
}

// Distribution records a value of a DogStatsD distribution ("d").
func (c *Client) Distribution(name string, v float64, tags ...string) {
	c.value(name, v, "d", 1, tags)
}

// Set adds value to a set, which counts unique values per flush.
func (c *Client) Set(name, value string, tags ...string) {
	if !c.keyFits(name, tags, 1) {
		return
	}
	c.emit(&clientLine{name: name, str: value, typ: "s", tags: tags})
}

// Sampled returns a view of c that sends each metric with probability
// rate, marked "|@rate" so the server scales counts back up.
func (c *Client) Sampled(rate float64) Sampled { return Sampled{c, rate} }

// Sampled sends a random fraction of the metrics given to it: see
// Client.Sampled. It is a small value, free to create for each call.
type Sampled struct {
	c    *Client
	rate float64
}

// Incr adds 1 to a counter.
func (s Sampled) Incr(name string, tags ...string) { s.c.count(name, 1, s.rate, tags) }

// Count adds n to a counter.
func (s Sampled) Count(name string, n int64, tags ...string) { s.c.count(name, n, s.rate, tags) }

// Timing records a duration, in milliseconds; a negative one is dropped
// and counted.
func (s Sampled) Timing(name string, d time.Duration, tags ...string) {
	s.c.timing(name, d, s.rate, tags)
}

// Histogram records a value of a histogram.
func (s Sampled) Histogram(name string, v float64, tags ...string) {
	s.c.value(name, v, "h", s.rate, tags)
}

// Distribution records a value of a distribution.
func (s Sampled) Distribution(name string, v float64, tags ...string) {
	s.c.value(name, v, "d", s.rate, tags)
}

// sampled decides whether an event at rate is sent.
func (c *Client) sampled(rate float64) bool {
	return rate >= 1 || float64(c.rand()>>11)*0x1p-53 < rate
}

func (c *Client) count(name string, n int64, rate float64, tags []string) {
	if !c.keyFits(name, tags, 1) {
		return
	}
	if rate >= 1 && c.tallies.slots != nil {
		if s, k := c.tallies.find(c.seed, name, tags); k != nil {
			c.addTally(s, k, n)
			return
		}
	}
	if !c.sampled(rate) {
		return
	}
	var num [clientNumberBytes]byte
	var r [clientNumberBytes]byte
	c.emit(&clientLine{name: name, num: strconv.AppendInt(num[:0], n, 10), typ: "c", rate: appendClientRate(r[:0], rate), tags: tags})
}

func (c *Client) timing(name string, d time.Duration, rate float64, tags []string) {
	if d < 0 {
		c.counters.dropped.Add(1)
		return
	}
	if !c.keyFits(name, tags, 1) || !c.sampled(rate) {
		return
	}
	var num [clientNumberBytes]byte
	var r [clientNumberBytes]byte
	c.emit(&clientLine{name: name, num: appendClientMillis(num[:0], d), typ: "ms", rate: appendClientRate(r[:0], rate), tags: tags})
}

func (c *Client) value(name string, v float64, typ string, rate float64, tags []string) {
	if !c.finite(v) || !c.keyFits(name, tags, 1) || !c.sampled(rate) {
		return
	}
	var num [clientNumberBytes]byte
	var r [clientNumberBytes]byte
	c.emit(&clientLine{name: name, num: appendClientNumber(num[:0], v), typ: typ, rate: appendClientRate(r[:0], rate), tags: tags})
}

func (c *Client) gauge(name string, v float64, reset, delta bool, tags []string) {
	lines := 1
	if reset {
		lines = 2 // "name:0|g" first
	}
	if !c.finite(v) || !c.keyFits(name, tags, lines) {
		return
	}
	var num [clientNumberBytes]byte
	b := num[:0]
	if delta && v >= 0 {
		b = append(b, '+')
	}
	c.emit(&clientLine{name: name, num: appendClientNumber(b, v), typ: "g", tags: tags, reset: reset})
}

// finite counts NaN and infinities as dropped: no server reads them.
func (c *Client) finite(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.counters.dropped.Add(1)
		return false
	}
	return true
}
