package zmq

import (
	"context"
	"net"
	"testing"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// conformanceHarness runs the suite over TCP on 127.0.0.1, with or
// without packing. Faults are injected by the subscriber's rehearsal
// (Config.Loss, Duplicate, Reorder) on whole ZMTP messages.
func conformanceHarness(pack bool) transporttest.Harness {
	return transporttest.Harness{
		NewPair: func(t *testing.T, f transporttest.Faults) (transporttest.Pair, error) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			pcfg := Config{Bind: []string{"tcp://127.0.0.1:0"}, Pack: pack, Heartbeat: 50 * 1e6}
			pub, err := NewPublisher(ctx, pcfg)
			if err != nil {
				return transporttest.Pair{}, err
			}
			ep := "tcp://" + pub.Addrs()[0].(*net.TCPAddr).String()
			pcfg.Bind = []string{ep}
			sub, err := NewSubscriber(ctx, Config{
				Connect: []string{ep}, Subscribe: []string{transporttest.Topic}, Reconnect: 10 * 1e6,
				Loss: f.Loss, Duplicate: f.Duplicate, Reorder: f.Reorder, Seed: uint64(f.Seed),
			})
			if err != nil {
				pub.Close()
				return transporttest.Pair{}, err
			}
			if err := pub.WaitSubscribers(ctx, transporttest.Topic, 1); err != nil {
				pub.Close()
				sub.Close()
				return transporttest.Pair{}, err
			}
			newPub := func() (transport.Publisher, error) {
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				p, err := NewPublisher(ctx, pcfg)
				if err != nil {
					return nil, err
				}
				if err := p.WaitSubscribers(ctx, transporttest.Topic, 1); err != nil {
					p.Close()
					return nil, err
				}
				return p, nil
			}
			return transporttest.Pair{Pub: pub, Sub: sub, NewPublisher: newPub}, nil
		},
		MaxPayload:    1 << 20,
		ContiguousSeq: true,
		Idle:          2 * 1e9,
	}
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, conformanceHarness(false))
}

func TestConformancePacked(t *testing.T) {
	transporttest.Run(t, conformanceHarness(true))
}
