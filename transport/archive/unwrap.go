package archive

import (
	"bytes"
	"strconv"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// recordKind says what a record of the log is to a Reader.
type recordKind uint8

const (
	recFeed      recordKind = iota + 1 // a message, gap marker or end marker of the feed
	recOtherFeed                       // of another stream
	recNoOrigin                        // not written by a recorder
	recMalformed                       // origin headers or a marker that cannot be read
)

// maxTopics bounds the topic names an unwrapper keeps, so that a
// message's topic is not a new string each time.
const maxTopics = 1024

// unwrapper turns records of the log into events of the feed. It keeps
// the last ASCII origin stream's text, which every record of a session
// repeats, and the topics seen.
type unwrapper struct {
	feed   uint32
	text   []byte
	id     transport.StreamID
	topics map[string]string
	v      transport.OriginValue // the last HeaderOrigin decoded
	last   string                // the last topic returned
}

func newUnwrapper(feed uint32) *unwrapper {
	return &unwrapper{feed: feed, topics: map[string]string{}}
}

// unwrap sets ev to what record m stands for in the feed: a message of the
// feed, with its origin stream, position, time and topic, and the
// record's key, payload and headers other than the origin headers (m's
// Headers, reordered); or, for a gap marker, the Gap; or, for an end
// marker, the StreamEnd of its session. pos is the feed position that
// orders the record: a message's, a gap marker's last, or an end
// marker's LastSeq (its session's last position). It
// reads the record's last HeaderOrigin, else the ASCII origin headers
// of earlier versions.
func (u *unwrapper) unwrap(m *transport.Message, ev *transport.Event) (pos Pos, kind recordKind) {
	at, ascii := -1, false
	for i := range m.Headers {
		switch k := m.Headers[i].Key; {
		case k == transport.HeaderOrigin:
			at = i
		case !ascii && transport.IsOriginHeader(k):
			ascii = true
		}
	}
	switch {
	case at >= 0:
		return u.unwrapBinary(m, at, ev)
	case ascii:
		return u.unwrapASCII(m, ev)
	}
	return pos, recNoOrigin
}

// unwrapBinary is unwrap of a record whose origin is its header at.
func (u *unwrapper) unwrapBinary(m *transport.Message, at int, ev *transport.Event) (pos Pos, kind recordKind) {
	v := &u.v
	if err := v.Decode(m.Headers[at].Value); err != nil {
		return pos, recMalformed
	}
	if v.Log || v.Feed != u.feed {
		return pos, recOtherFeed
	}
	id := transport.StreamID{Feed: v.Feed, Session: v.Session}
	if v.Gap {
		g := transport.Gap{Stream: id, From: v.Seq, To: v.GapTo, Reason: v.GapReason}
		*ev = transport.Event{Kind: transport.EventGap, Gap: g}
		return Pos{id.Session, g.To}, recFeed
	}
	if v.End {
		e := transport.StreamEnd{Stream: id, LastSeq: v.Seq, Reason: v.EndReason}
		*ev = transport.Event{Kind: transport.EventStreamEnd, End: e}
		return Pos{id.Session, e.LastSeq}, recFeed
	}
	*ev = transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: id, Seq: v.Seq, Time: time.Unix(0, v.Time), Topic: u.topic(v.Topic), Key: m.Key, Headers: appHeaders(m.Headers), Payload: m.Payload,
	}}
	return Pos{id.Session, v.Seq}, recFeed
}

// appHeaders returns hs without its origin headers: hs itself when it
// has only those, reordered in place otherwise; nil when none is left.
func appHeaders(hs []transport.Header) []transport.Header {
	app := 0
	for i := range hs {
		if !transport.IsOriginHeader(hs[i].Key) {
			app++
		}
	}
	if app == 0 {
		return nil
	}
	out := hs[:0]
	for _, h := range hs {
		if !transport.IsOriginHeader(h.Key) {
			out = append(out, h)
		}
	}
	return out
}

// unwrapASCII is unwrap of a record with the ASCII origin headers of
// earlier versions.
func (u *unwrapper) unwrapASCII(m *transport.Message, ev *transport.Event) (pos Pos, kind recordKind) {
	var stream, seq, ts, topic []byte
	marker := false
	for _, h := range m.Headers {
		switch h.Key {
		case transport.HeaderOriginStream:
			stream = h.Value
		case transport.HeaderOriginSeq:
			seq = h.Value
		case transport.HeaderOriginTime:
			ts = h.Value
		case transport.HeaderOriginTopic:
			topic = h.Value
		case transport.HeaderGap:
			marker = true
		}
	}
	id, ok := u.stream(stream)
	if !ok {
		return pos, recMalformed
	}
	if id.Topic != "" || id.Feed != u.feed {
		return pos, recOtherFeed
	}
	if marker {
		g, ok, err := transport.ParseGapMarker(*m)
		if !ok || err != nil {
			return pos, recMalformed
		}
		*ev = transport.Event{Kind: transport.EventGap, Gap: g}
		return Pos{g.Stream.Session, g.To}, recFeed
	}
	n, err1 := strconv.ParseUint(string(seq), 10, 64)
	ns, err2 := strconv.ParseInt(string(ts), 10, 64)
	if seq == nil || ts == nil || err1 != nil || err2 != nil {
		return pos, recMalformed
	}
	*ev = transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: id, Seq: n, Time: time.Unix(0, ns), Topic: u.topic(topic), Key: m.Key, Headers: appHeaders(m.Headers), Payload: m.Payload,
	}}
	return Pos{id.Session, n}, recFeed
}

// stream parses an origin stream's text, or returns the last one's.
func (u *unwrapper) stream(text []byte) (transport.StreamID, bool) {
	if text == nil {
		return transport.StreamID{}, false
	}
	if u.text != nil && bytes.Equal(text, u.text) {
		return u.id, true
	}
	id, err := transport.ParseStreamID(string(text))
	if err != nil {
		return transport.StreamID{}, false
	}
	u.text, u.id = append(u.text[:0], text...), id
	return id, true
}

// topic returns b as a string, the same string each time for the
// topics it keeps.
func (u *unwrapper) topic(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if string(b) == u.last { // a feed's messages mostly repeat a topic
		return u.last
	}
	if s, ok := u.topics[string(b)]; ok {
		u.last = s
		return s
	}
	s := string(b)
	if len(u.topics) < maxTopics {
		u.topics[s] = s
	}
	return s
}
