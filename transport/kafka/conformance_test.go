package kafka

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, transporttest.Harness{
		NewPair: func(t *testing.T, f transporttest.Faults) (transporttest.Pair, error) {
			if !f.IsZero() {
				return transporttest.Pair{}, transporttest.ErrFaultsUnsupported
			}
			// A fresh logd per pair: every pair publishes to the suite's
			// topic, and reads it from the start.
			addr := startLogd(t)
			u, _ := url.Parse(fmt.Sprintf("logd://%s/%s?from=earliest", addr, transporttest.Topic))
			cfg, err := ParseURL(u)
			if err != nil {
				return transporttest.Pair{}, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sub, err := NewSubscriber(ctx, cfg)
			if err != nil {
				return transporttest.Pair{}, err
			}
			pub, err := NewPublisher(ctx, cfg)
			if err != nil {
				sub.Close()
				return transporttest.Pair{}, err
			}
			return transporttest.Pair{Pub: pub, Sub: sub}, nil
		},
		MaxPayload:     512 << 10,
		TimeResolution: time.Millisecond,
	})
}
