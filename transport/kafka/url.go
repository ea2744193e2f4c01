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
	return NewPublisher(ctx, e.cfg)
}

func (e endpoint) Subscriber(ctx context.Context) (transport.Subscriber, error) {
	return NewSubscriber(ctx, e.cfg)
}

func openURL(_ context.Context, u *url.URL) (transport.Endpoint, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	return endpoint{cfg}, nil
}
