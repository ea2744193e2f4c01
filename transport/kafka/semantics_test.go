package kafka

import (
	"context"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestSemantics: the flags follow the URL, and the publisher and the
// subscriber of one URL declare the same ones. acks=leader turns
// idempotence off, so it is neither Durable nor Deduplicated; a group is
// AtLeastOnce, and so never Deduplicated, nor Replay.
func TestSemantics(t *testing.T) {
	const (
		base = transport.Ordered | transport.GapReports
		all  = transport.Durable | transport.Deduplicated
	)
	if got := (Config{}).Semantics(); got != semantics {
		t.Errorf("the default URL declares %s, the scheme says %s", got, semantics)
	}
	addr := startLogd(t)
	for _, tc := range []struct {
		query string
		want  transport.Semantics
	}{
		{"", base | all | transport.Replay},
		{"?acks=leader", base | transport.Replay},
		{"?group=g", base | transport.Durable | transport.AtLeastOnce},
		{"?group=g&acks=leader", base | transport.AtLeastOnce},
	} {
		ctx := context.Background()
		ep, err := transport.Open(ctx, "logd://"+addr+"/sem"+tc.query)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := ep.Publisher(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := ep.Subscriber(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, acks := sub.(transport.Acknowledger)
		if pub.Semantics() != tc.want || sub.Semantics() != tc.want || acks != tc.want.Has(transport.AtLeastOnce) {
			t.Errorf("%q: publisher %s, subscriber %s (an Acknowledger: %v), want %s", tc.query, pub.Semantics(), sub.Semantics(), acks, tc.want)
		}
		pub.Close()
		sub.Close()
	}
}
