package matrix

import (
	"context"
	"fmt"

	"github.com/brokerless/brokerless/multicast"
)

// mcast is our multicast transport (mcast://, NACK repair), on lo with
// TTL 0; loss is injected by the subscriber's loss= parameter, before
// repair.
type mcast struct{}

func (mcast) Name() string      { return "mcast" }
func (mcast) Baseline() string  { return "raw-mcast" }
func (mcast) Peer() string      { return "libzmq-epgm" }
func (mcast) Can(Options) error { return loopbackMulticast() }

func (mcast) Open(ctx context.Context, o Options) (Link, error) {
	g, err := newGroup()
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("mcast://%s?ttl=0&iface=lo", g)
	subs := make([]string, o.Subscribers)
	for i := range subs {
		subs[i] = base
		if o.Loss > 0 {
			subs[i] += fmt.Sprintf("&loss=%g&seed=%d", o.Loss, o.Seed+int64(i))
		}
	}
	l, err := openURL(ctx, base, subs, false, nil)
	if err != nil {
		return nil, err
	}
	for _, s := range l.subs {
		us := s.(*urlSub)
		if ms, ok := us.s.(*multicast.Subscriber); ok {
			us.recovered = func() uint64 { return ms.Stats().Recovered }
		}
	}
	return l, nil
}
