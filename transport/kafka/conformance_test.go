package kafka

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
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

func TestURL(t *testing.T) {
	for _, good := range []string{
		"logd://127.0.0.1:9092/t", "kafka://a:1,b:2/t?from=latest&group=g&acks=leader",
		"logd://h:1/t?from=42&partition=3", "logd://h:1/t?from=2026-01-02T03:04:05Z",
	} {
		if _, err := transport.Open(context.Background(), good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{"logd://h:1/", "logd:///t", "logd://h:1/t?from=soon", "logd://h:1/t?acks=2", "logd://h:1/a/b"} {
		if _, err := transport.Open(context.Background(), bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
