package transport

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The ASCII headers that carried a message's origin across a pipe or a
// recorder before HeaderOrigin, one header per field. Archives written
// then hold them, so ParseOrigin and ParseGapMarker still read them;
// nothing writes them now.
const (
	// HeaderOriginStream is the source StreamID (see FormatStreamID).
	HeaderOriginStream = "brokerless.origin.stream"
	// HeaderOriginSeq is the position in the source stream, in decimal.
	HeaderOriginSeq = "brokerless.origin.seq"
	// HeaderOriginTime is the source publish time, Unix nanoseconds in
	// decimal.
	HeaderOriginTime = "brokerless.origin.time"
	// HeaderOriginTopic is the message's topic in the source, when it
	// had one.
	HeaderOriginTopic = "brokerless.origin.topic"
	// HeaderGap marks a gap marker: a record that stands for messages
	// From..To of the origin stream that will never be delivered. Its
	// value is "FROM-TO REASON", REASON the GapReason's number.
	HeaderGap = "brokerless.gap"
)

// IsOriginHeader reports whether key is that of an origin header, of
// either kind (HeaderOrigin, or the ASCII ones of earlier versions).
func IsOriginHeader(key string) bool {
	switch key {
	case HeaderOrigin, HeaderOriginStream, HeaderOriginSeq, HeaderOriginTime, HeaderOriginTopic, HeaderGap:
		return true
	}
	return false
}

// ErrBadOrigin is wrapped by the errors of ParseOrigin, ParseGapMarker,
// ParseEndMarker and ParseStreamID.
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

// AppendOrigin appends o's origin header (HeaderOrigin) to hs. A pipe
// carries the message's topic in it rather than as the message's topic,
// which names where a log writes the message: the destination URL
// decides that.
func AppendOrigin(hs []Header, o Origin) []Header {
	return append(hs, Header{Key: HeaderOrigin, Value: AppendOriginValue(nil, o, nil)})
}

// lastOrigin returns the value of the last HeaderOrigin of hs.
func lastOrigin(hs []Header) (v []byte, ok bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == HeaderOrigin {
			return hs[i].Value, true
		}
	}
	return nil, false
}

// ParseOrigin reads the origin of hs: its last HeaderOrigin, else the
// ASCII headers of earlier versions. ok is false when hs has none of
// them; a malformed value, or a partial or malformed ASCII set, is an
// error.
func ParseOrigin(hs []Header) (o Origin, ok bool, err error) {
	if b, has := lastOrigin(hs); has {
		var v OriginValue
		if err := v.Decode(b); err != nil {
			return Origin{}, false, err
		}
		return v.Origin(), true, nil
	}
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

// GapMarker is the message a pipe writes for gap g of its source: one
// HeaderOrigin that names g's stream, range and reason. at is the
// marker's publish time. A gap marker has no payload of its own.
func GapMarker(g Gap, at time.Time) Message {
	hs := []Header{{Key: HeaderOrigin, Value: AppendOriginValue(nil, Origin{Time: at}, &g)}}
	return Message{Time: at, Headers: hs}
}

// ParseGapMarker reads a gap marker back as the Gap it stands for: its
// last HeaderOrigin, else the ASCII headers of earlier versions. ok is
// false when m is not a gap marker.
func ParseGapMarker(m Message) (g Gap, ok bool, err error) {
	ev, ok, err := ParseMarker(m)
	if !ok || ev.Kind != EventGap {
		return Gap{}, false, err
	}
	return ev.Gap, true, nil
}

// EndMarker is the message a pipe writes for the end of a stream of its
// source that the publisher closed (a feed's session, end.Reason
// EndClosed): one HeaderOrigin that names end's stream, its last
// position (LastSeq) and reason. at is the marker's publish time. A
// reader of the destination can then tell the session's end from a
// tail it lacks. An end marker has no payload of its own; readers from
// before end markers skip it as malformed (see HeaderOrigin).
func EndMarker(end StreamEnd, at time.Time) Message {
	hs := []Header{{Key: HeaderOrigin, Value: AppendEndValue(nil, end, at)}}
	return Message{Time: at, Headers: hs}
}

// ParseEndMarker reads an end marker back as the StreamEnd it stands
// for: its last HeaderOrigin. ok is false when m is not an end marker
// (the ASCII headers of earlier versions had none).
func ParseEndMarker(m Message) (end StreamEnd, ok bool, err error) {
	if _, has := lastOrigin(m.Headers); !has {
		return StreamEnd{}, false, nil
	}
	ev, ok, err := ParseMarker(m)
	if !ok || ev.Kind != EventStreamEnd {
		return StreamEnd{}, false, err
	}
	return ev.End, true, nil
}

// ParseMarker reads a marker a pipe wrote back as the event it stands
// for, decoding its origin once: a gap marker as its Gap (EventGap), an
// end marker as its StreamEnd (EventStreamEnd). ok is false when m is
// neither.
func ParseMarker(m Message) (ev Event, ok bool, err error) {
	b, has := lastOrigin(m.Headers)
	if !has {
		g, ok, err := parseASCIIGapMarker(m)
		return Event{Kind: EventGap, Gap: g}, ok, err
	}
	var v OriginValue
	if err := v.Decode(b); err != nil {
		return Event{}, false, err
	}
	switch {
	case v.Gap:
		return Event{Kind: EventGap, Gap: Gap{Stream: v.Stream(), From: v.Seq, To: v.GapTo, Reason: v.GapReason}}, true, nil
	case v.End:
		return Event{Kind: EventStreamEnd, End: StreamEnd{Stream: v.Stream(), LastSeq: v.Seq, Reason: v.EndReason}}, true, nil
	}
	return Event{}, false, nil
}

// parseASCIIGapMarker reads a gap marker of earlier versions.
func parseASCIIGapMarker(m Message) (g Gap, ok bool, err error) {
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
