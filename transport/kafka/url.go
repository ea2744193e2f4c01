package kafka

import (
	"context"
	"net/url"

	"github.com/brokerless/brokerless/transport"
)

func init() {
	transport.Register("logd", openURL)
	transport.Register("kafka", openURL)
}

type endpoint struct{ cfg Config }

func (e endpoint) Publisher(ctx context.Context) (transport.Publisher, error) {
	p, err := NewPublisher(ctx, e.cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Subscriber is a GroupSubscriber (an Acknowledger) when the URL names a
// group, else a Subscriber.
func (e endpoint) Subscriber(ctx context.Context) (transport.Subscriber, error) {
	if e.cfg.Group != "" {
		g, err := NewGroupSubscriber(ctx, e.cfg)
		if err != nil {
			return nil, err
		}
		return g, nil
	}
	s, err := NewSubscriber(ctx, e.cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func openURL(_ context.Context, u *url.URL) (transport.Endpoint, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	return endpoint{cfg}, nil
}
