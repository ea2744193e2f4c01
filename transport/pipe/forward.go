package pipe

import (
	"strconv"

	"github.com/brokerless/brokerless/transport"
)

// forward returns the message to write for m: its key, headers and
// payload, its publish time, and its origin headers (as
// transport.AppendOrigin writes them), with no topic of its own so that
// the destination URL decides where it goes. The slices it makes are
// reused by the next call.
func (c *Core) forward(m *transport.Message) transport.Message {
	if !c.hasText || c.textID != m.Stream {
		c.textID, c.hasText = m.Stream, true
		c.text = append(c.text[:0], transport.FormatStreamID(m.Stream)...)
	}
	v := strconv.AppendUint(c.vals[:0], m.Seq, 10)
	seqEnd := len(v)
	v = strconv.AppendInt(v, m.Time.UnixNano(), 10)
	timeEnd := len(v)
	v = append(v, m.Topic...)
	c.vals = v
	hs := append(c.hdrs[:0], m.Headers...)
	hs = append(hs,
		transport.Header{Key: transport.HeaderOriginStream, Value: c.text},
		transport.Header{Key: transport.HeaderOriginSeq, Value: v[:seqEnd:seqEnd]},
		transport.Header{Key: transport.HeaderOriginTime, Value: v[seqEnd:timeEnd:timeEnd]},
	)
	if m.Topic != "" {
		hs = append(hs, transport.Header{Key: transport.HeaderOriginTopic, Value: v[timeEnd:]})
	}
	c.hdrs = hs
	return transport.Message{Time: m.Time, Key: m.Key, Headers: hs, Payload: m.Payload}
}
