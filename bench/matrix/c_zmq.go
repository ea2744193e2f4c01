package matrix

import (
	"context"
	"fmt"

	_ "github.com/brokerless/brokerless/transport/zmq" // registers zmq+tcp://
)

// zmqOurs is our ZeroMQ transport (zmq+tcp://, ZMTP 3 over TCP, default
// hwm: a subscriber more than 1000 messages behind loses messages, which
// it reports as gaps); loss is injected by the subscriber's loss=.
type zmqOurs struct{}

func (zmqOurs) Name() string      { return "zmq" }
func (zmqOurs) Baseline() string  { return "raw-tcp" }
func (zmqOurs) Peer() string      { return "libzmq-tcp" }
func (zmqOurs) Can(Options) error { return nil }

func (zmqOurs) Open(ctx context.Context, o Options) (Link, error) {
	port, err := freeTCPPort()
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("zmq+tcp://127.0.0.1:%d", port)
	subs := make([]string, o.Subscribers)
	for i := range subs {
		subs[i] = base + "?subscribe=" + zmqTopic
		if o.Loss > 0 {
			subs[i] += fmt.Sprintf("&loss=%g&seed=%d", o.Loss, o.Seed+int64(i))
		}
	}
	l, err := openURL(ctx, base, subs, false, nil)
	if err != nil {
		return nil, err
	}
	l.topic = zmqTopic
	return l, nil
}
