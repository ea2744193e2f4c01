package matrix

import (
	"fmt"
	"strings"
)

// Kind is a scenario.
type Kind string

const (
	// Throughput: the highest rate at which every message reaches every
	// subscriber, found by probing rates (Options.Size, one subscriber).
	Throughput Kind = "throughput"
	// FanOut: Throughput with Subscribers subscribers.
	FanOut Kind = "fanout"
	// Durability: Throughput with the transport's durability on or off.
	Durability Kind = "durability"
	// Latency: one-way latency at a fixed open-loop rate, from the time
	// each message was due (no coordinated omission).
	Latency Kind = "latency"
	// PingPong: round trips, one message in flight, measured by the
	// side that sent it (no clock shared between the two sides).
	PingPong Kind = "pingpong"
	// Loss: a fixed open-loop rate with Loss dropped by each subscriber
	// on purpose: delivered, recovered, gaps.
	Loss Kind = "loss"
)

// Cell is one column: a scenario and its parameters.
type Cell struct {
	Kind        Kind    `json:"kind"`
	Size        int     `json:"size"`
	Subscribers int     `json:"subscribers"`
	Rate        float64 `json:"rate,omitempty"` // Latency, Loss: messages/s
	Loss        float64 `json:"loss,omitempty"`
	Durable     bool    `json:"durable,omitempty"`
}

// ID names the cell, e.g. "throughput/256B" or "latency/256B@10000/s".
func (c Cell) ID() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s", c.Kind, sizeName(c.Size))
	if c.Kind == FanOut {
		fmt.Fprintf(&b, "/%dsubs", c.Subscribers)
	}
	if c.Kind == Durability {
		if c.Durable {
			b.WriteString("/fsync")
		} else {
			b.WriteString("/no-fsync")
		}
	}
	if c.Loss > 0 {
		fmt.Fprintf(&b, "/loss%g%%", c.Loss*100)
	}
	if c.Rate > 0 {
		fmt.Fprintf(&b, "@%.0f/s", c.Rate)
	}
	return b.String()
}

// Options is what a Link for the cell must carry.
func (c Cell) Options(messages int, seed int64) Options {
	return Options{Kind: c.Kind, Size: c.Size, Subscribers: c.Subscribers, Loss: c.Loss, Durable: c.Durable, Messages: messages, Seed: seed}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	default:
		return fmt.Sprintf("%dB", n)
	}
}

// Metric is one figure a cell reports each round.
type Metric struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Higher: a higher value is better.
	Higher bool `json:"higher"`
}

// Metrics of each kind; the first is the cell's headline figure.
var metricsOf = map[Kind][]Metric{
	Throughput: {{"rate", "msgs/s", true}, {"MB/s", "MB/s", true}},
	FanOut:     {{"rate", "msgs/s", true}, {"deliveries/s", "msgs/s", true}},
	Durability: {{"rate", "msgs/s", true}},
	Latency:    {{"p50", "µs", false}, {"p90", "µs", false}, {"p99", "µs", false}, {"p99.9", "µs", false}, {"max", "µs", false}, {"lost", "msgs", false}, {"unsent", "msgs", false}},
	PingPong:   {{"p50", "µs", false}, {"p90", "µs", false}, {"p99", "µs", false}, {"p99.9", "µs", false}, {"max", "µs", false}, {"lost", "msgs", false}},
	Loss:       {{"delivered", "%", true}, {"recovered", "frames", true}, {"gaps", "msgs", false}, {"silent", "msgs", false}, {"p99", "µs", false}},
}

// Headline is the kind's main metric.
func (k Kind) Headline() Metric { return metricsOf[k][0] }
