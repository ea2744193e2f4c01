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
	recFeed      recordKind = iota + 1 // a message or gap marker of the feed
	recOtherFeed                       // of another stream
	recNoOrigin                        // not written by a recorder
	recMalformed                       // origin headers or a marker that cannot be read
)

// maxTopics bounds the topic names an unwrapper keeps, so that a
// message's topic is not a new string each time.
const maxTopics = 1024

// unwrapper turns records of the log into events of the feed. It keeps
// the last origin stream's text, which every record of a session
// repeats, and the topics seen.
type unwrapper struct {
	feed   uint32
	text   []byte
	id     transport.StreamID
	topics map[string]string
}

func newUnwrapper(feed uint32) *unwrapper {
	return &unwrapper{feed: feed, topics: map[string]string{}}
}

// unwrap returns what record m stands for in the feed: a message of the
// feed, with its origin stream, position, time and topic, and the
// record's key, payload and headers other than the origin headers (m's
// Headers, reordered); or, for a gap marker, the Gap. pos is the feed
// position that orders the record: a message's, or a marker's last.
func (u *unwrapper) unwrap(m *transport.Message) (ev transport.Event, pos Pos, kind recordKind) {
	var stream, seq, ts, topic []byte
	origin, marker := 0, false
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
		default:
			continue
		}
		origin++
	}
	if origin == 0 {
		return ev, pos, recNoOrigin
	}
	id, ok := u.stream(stream)
	if !ok {
		return ev, pos, recMalformed
	}
	if id.Topic != "" || id.Feed != u.feed {
		return ev, pos, recOtherFeed
	}
	if marker {
		g, ok, err := transport.ParseGapMarker(*m)
		if !ok || err != nil {
			return ev, pos, recMalformed
		}
		return transport.Event{Kind: transport.EventGap, Gap: g}, Pos{g.Stream.Session, g.To}, recFeed
	}
	n, err1 := strconv.ParseUint(string(seq), 10, 64)
	ns, err2 := strconv.ParseInt(string(ts), 10, 64)
	if seq == nil || ts == nil || err1 != nil || err2 != nil {
		return ev, pos, recMalformed
	}
	hs := m.Headers[:0]
	for _, h := range m.Headers {
		switch h.Key {
		case transport.HeaderOriginStream, transport.HeaderOriginSeq, transport.HeaderOriginTime, transport.HeaderOriginTopic:
		default:
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		hs = nil
	}
	ev = transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: id, Seq: n, Time: time.Unix(0, ns), Topic: u.topic(topic), Key: m.Key, Headers: hs, Payload: m.Payload,
	}}
	return ev, Pos{id.Session, n}, recFeed
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
	if s, ok := u.topics[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(u.topics) < maxTopics {
		u.topics[s] = s
	}
	return s
}
