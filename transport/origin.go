package transport

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers that carry a message's origin across a pipe or a recorder, so
// that readers of the destination know which stream, position and time
// each message had where it was first published. Every value is ASCII
// text, readable with any Kafka tool.
const (
	// HeaderOriginStream is the source StreamID (see FormatStreamID).
	HeaderOriginStream = "brokerless.origin.stream"
	// HeaderOriginSeq is the position in the source stream, in decimal.
	HeaderOriginSeq = "brokerless.origin.seq"
	// HeaderOriginTime is the source publish time, Unix nanoseconds in
	// decimal.
	HeaderOriginTime = "brokerless.origin.time"
	// HeaderOriginTopic is the message's topic in the source, when it
	// had one. A pipe carries it here rather than as the message's topic,
	// which names where a log writes the message: the destination URL
	// decides that.
	HeaderOriginTopic = "brokerless.origin.topic"
	// HeaderGap marks a gap marker: a record that stands for messages
	// From..To of the origin stream that will never be delivered. Its
	// value is "FROM-TO REASON", REASON the GapReason's number. A gap
	// marker has no payload of its own.
	HeaderGap = "brokerless.gap"
)

// ErrBadOrigin is wrapped by the errors of ParseOrigin, ParseGapMarker
// and ParseStreamID.
var ErrBadOrigin = errors.New("transport: bad origin headers")

// Origin is where a message came from.
type Origin struct {
	Stream StreamID
	Seq    uint64
	Time   time.Time
	// Topic is the message's topic in the source; optional.
	Topic string
}

// FormatStreamID writes id as text that ParseStreamID reads back:
// "topic=T partition=P" for a log's stream, "feed=F session=S" (S in
// hexadecimal) otherwise. Kafka topic names cannot hold a space.
func FormatStreamID(id StreamID) string {
	if id.Topic != "" {
		return "topic=" + id.Topic + " partition=" + strconv.FormatInt(int64(id.Partition), 10)
	}
	return "feed=" + strconv.FormatUint(uint64(id.Feed), 10) + " session=" + strconv.FormatUint(id.Session, 16)
}

// ParseStreamID reads what FormatStreamID wrote.
func ParseStreamID(s string) (StreamID, error) {
	a, b, ok := strings.Cut(s, " ")
	if !ok {
		return StreamID{}, fmt.Errorf("%w: stream %q: want two fields", ErrBadOrigin, s)
	}
	ka, va, _ := strings.Cut(a, "=")
	kb, vb, _ := strings.Cut(b, "=")
	switch {
	case ka == "topic" && kb == "partition" && va != "" && !strings.Contains(va, " "):
		p, err := strconv.ParseInt(vb, 10, 32)
		if err != nil || p < 0 {
			return StreamID{}, fmt.Errorf("%w: stream %q: bad partition", ErrBadOrigin, s)
		}
		return StreamID{Topic: va, Partition: int32(p)}, nil
	case ka == "feed" && kb == "session":
		f, err := strconv.ParseUint(va, 10, 32)
		if err != nil {
			return StreamID{}, fmt.Errorf("%w: stream %q: bad feed", ErrBadOrigin, s)
		}
		sess, err := strconv.ParseUint(vb, 16, 64)
		if err != nil {
			return StreamID{}, fmt.Errorf("%w: stream %q: bad session", ErrBadOrigin, s)
		}
		return StreamID{Feed: uint32(f), Session: sess}, nil
	}
	return StreamID{}, fmt.Errorf("%w: stream %q: want topic=T partition=P or feed=F session=S", ErrBadOrigin, s)
}

// AppendOrigin appends the origin headers of o to hs (the topic's only
// when o has one).
func AppendOrigin(hs []Header, o Origin) []Header {
	hs = append(hs,
		Header{Key: HeaderOriginStream, Value: []byte(FormatStreamID(o.Stream))},
		Header{Key: HeaderOriginSeq, Value: strconv.AppendUint(nil, o.Seq, 10)},
		Header{Key: HeaderOriginTime, Value: strconv.AppendInt(nil, o.Time.UnixNano(), 10)},
	)
	if o.Topic != "" {
		hs = append(hs, Header{Key: HeaderOriginTopic, Value: []byte(o.Topic)})
	}
	return hs
}

// ParseOrigin reads the origin headers of hs. ok is false when hs has
// none of them; a partial or malformed set is an error.
func ParseOrigin(hs []Header) (o Origin, ok bool, err error) {
	var stream, seq, ts, topic []byte
	for _, h := range hs {
		switch h.Key {
		case HeaderOriginStream:
			stream = h.Value
		case HeaderOriginSeq:
			seq = h.Value
		case HeaderOriginTime:
			ts = h.Value
		case HeaderOriginTopic:
			topic = h.Value
		}
	}
	if stream == nil && seq == nil && ts == nil {
		return Origin{}, false, nil
	}
	if stream == nil || seq == nil || ts == nil {
		return Origin{}, false, fmt.Errorf("%w: want all of %s, %s and %s", ErrBadOrigin, HeaderOriginStream, HeaderOriginSeq, HeaderOriginTime)
	}
	if o.Stream, err = ParseStreamID(string(stream)); err != nil {
		return Origin{}, false, err
	}
	if o.Seq, err = strconv.ParseUint(string(seq), 10, 64); err != nil {
		return Origin{}, false, fmt.Errorf("%w: %s %q", ErrBadOrigin, HeaderOriginSeq, seq)
	}
	ns, err := strconv.ParseInt(string(ts), 10, 64)
	if err != nil {
		return Origin{}, false, fmt.Errorf("%w: %s %q", ErrBadOrigin, HeaderOriginTime, ts)
	}
	o.Time = time.Unix(0, ns)
	o.Topic = string(topic)
	return o, true, nil
}

// GapMarker is the message a pipe writes for gap g of its source: the
// origin headers name g.Stream and g.From, and HeaderGap the range and
// reason. at is the marker's publish time.
func GapMarker(g Gap, at time.Time) Message {
	hs := AppendOrigin(nil, Origin{Stream: g.Stream, Seq: g.From, Time: at})
	hs = append(hs, Header{Key: HeaderGap, Value: fmt.Appendf(nil, "%d-%d %d", g.From, g.To, g.Reason)})
	return Message{Time: at, Headers: hs}
}

// ParseGapMarker reads a gap marker back as the Gap it stands for. ok is
// false when m is not a gap marker.
func ParseGapMarker(m Message) (g Gap, ok bool, err error) {
	var mark []byte
	for _, h := range m.Headers {
		if h.Key == HeaderGap {
			mark = h.Value
		}
	}
	if mark == nil {
		return Gap{}, false, nil
	}
	o, has, err := ParseOrigin(m.Headers)
	if err != nil {
		return Gap{}, false, err
	}
	if !has {
		return Gap{}, false, fmt.Errorf("%w: a gap marker without origin headers", ErrBadOrigin)
	}
	rng, reason, _ := strings.Cut(string(mark), " ")
	from, to, _ := strings.Cut(rng, "-")
	g.Stream = o.Stream
	var e1, e2, e3 error
	g.From, e1 = strconv.ParseUint(from, 10, 64)
	g.To, e2 = strconv.ParseUint(to, 10, 64)
	r, e3 := strconv.ParseUint(reason, 10, 8)
	if e1 != nil || e2 != nil || e3 != nil || g.To < g.From || g.From != o.Seq || r == 0 {
		return Gap{}, false, fmt.Errorf("%w: %s %q: want FROM-TO REASON, FROM equal to the origin position", ErrBadOrigin, HeaderGap, mark)
	}
	g.Reason = GapReason(r)
	return g, true, nil
}
