package multicast

import (
	"context"
	"testing"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
	"github.com/brokerless/brokerless/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, transporttest.Harness{
		NewPair: func(t *testing.T, f transporttest.Faults) (transporttest.Pair, error) {
			cfg := testConfig(t)
			scfg := withFaults(cfg, faultnet.Faults{Loss: f.Loss, Duplicate: f.Duplicate, Reorder: f.Reorder, Seed: f.Seed})
			ctx := context.Background()
			sub, err := NewSubscriber(ctx, scfg)
			if err != nil {
				return transporttest.Pair{}, err
			}
			newPub := func() (transport.Publisher, error) { return NewPublisher(ctx, cfg) }
			pub, err := newPub()
			if err != nil {
				sub.Close()
				return transporttest.Pair{}, err
			}
			return transporttest.Pair{Pub: pub, Sub: sub, NewPublisher: newPub}, nil
		},
		MaxPayload: 1 << 20,
	})
}
