package pipe

import (
	"github.com/brokerless/brokerless/transport"
)

// forward returns the message to write for m: its key, headers and
// payload, its publish time, and its origin header (as
// transport.AppendOrigin writes it), with no topic of its own so that
// the destination URL decides where it goes. The slices it makes are
// reused by the next call.
func (c *Core) forward(m *transport.Message) transport.Message {
	c.vals = transport.AppendOriginValue(c.vals[:0], transport.Origin{Stream: m.Stream, Seq: m.Seq, Time: m.Time, Topic: m.Topic}, nil)
	hs := append(c.hdrs[:0], m.Headers...)
	hs = append(hs, transport.Header{Key: transport.HeaderOrigin, Value: c.vals})
	c.hdrs = hs
	return transport.Message{Time: m.Time, Key: m.Key, Headers: hs, Payload: m.Payload}
}
