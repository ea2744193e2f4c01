package statsd

// Type is the kind of a metric.
type Type uint8

// Metric types. Histogram and Distribution (DogStatsD's h and d) are
// aggregated as timers.
const (
	Counter Type = iota + 1
	Gauge
	Timer
	Set
	Histogram
	Distribution
	// Sequence is a sequence line: Key is the client id, Seq the
	// datagram's number.
	Sequence
)

var typeNames = [...]string{Counter: "counter", Gauge: "gauge", Timer: "timer", Set: "set",
	Histogram: "histogram", Distribution: "distribution", Sequence: "sequence"}

func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "unknown"
}

// Metric is one value read from a line. Its slices point into the
// Parser's arena and into the packet; they are valid until the Parser's
// next Reset and as long as the packet's bytes.
type Metric struct {
	// Key is the sanitized name followed by the sorted tags, each as
	// ";tag" with a tag's first ':' turned into '=' (Etsy 0.9.0's
	// layout): "api.hits;env=prod;region=eu".
	Key  []byte
	Type Type
	// Value is the number of a counter, gauge or timer.
	Value float64
	// Delta marks a gauge value written with a leading + or -.
	Delta bool
	// Rate is the sample rate, 1 when the line has none.
	Rate float64
	// Member is a set's member, as written.
	Member []byte
	// Seq is a Sequence line's number.
	Seq uint64
}
