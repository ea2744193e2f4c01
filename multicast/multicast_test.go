package multicast

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
)

func TestPublishSubscribe(t *testing.T) {
	cfg := testConfig(t)
	s1, s2 := mustSub(t, cfg), mustSub(t, cfg)
	p := mustPub(t, cfg)
	const n = 20000
	go publishN(t, p, 0, n, 64)
	for _, s := range []*Subscriber{s1, s2} {
		idx, gaps := collect(t, s, n, 20*time.Second)
		if len(gaps) > 0 {
			t.Fatalf("gaps %v", gaps)
		}
		for i, v := range idx {
			if v != i {
				t.Fatalf("message %d has index %d", i, v)
			}
		}
	}
	if st := p.Stats(); st.Datagrams >= n/2 {
		t.Logf("publisher stats %+v", st)
	}
}

// TestLossRecovery: 200,000 messages through 1%, 5% and 20% loss plus
// duplication and reordering on the subscriber's receive path, over real
// loopback multicast, published as fast as Publish takes them: all
// delivered once, in order, no gap. At 20% loss the publisher has flow
// control: without it, a publisher at full speed may run further ahead
// of the subscriber's oldest hole than the subscriber's reorder buffer
// holds (GapOverflow, about once in 20 runs on a loaded 2-core machine),
// and no gap is what flow control promises, not what a publisher going
// at its own pace does.
func TestLossRecovery(t *testing.T) {
	n := 200_000
	if testing.Short() || raceEnabled {
		n = 30_000
	}
	for _, loss := range []float64{0.01, 0.05, 0.20} {
		t.Run(fmt.Sprint(loss), func(t *testing.T) {
			cfg := testConfig(t)
			scfg := withFaults(cfg, faultnet.Faults{Loss: loss, Duplicate: 0.01, Reorder: 0.01, Seed: 7})
			if loss >= 0.2 {
				cfg.Sender.Flow = reliable.FlowConfig{Mode: reliable.FlowMin, MinReceivers: 1}
			}
			s := mustSub(t, scfg)
			p := mustPub(t, cfg)
			go publishN(t, p, 0, n, 64)
			idx, gaps := collectFrom(t, s, p, n, 20*time.Second)
			if len(gaps) > 0 {
				t.Fatalf("%d gaps, first %v; stats %+v\npublisher %+v", len(gaps), gaps[0], s.Stats(), p.Stats())
			}
			for i, v := range idx {
				if v != i {
					t.Fatalf("message %d has index %d", i, v)
				}
			}
			st := s.Stats()
			if st.Recovered == 0 || st.FilterDrops == 0 {
				t.Fatalf("no loss injected or recovered: %+v", st)
			}
			t.Logf("subscriber %+v", st)
		})
	}
}

func TestOpenByURL(t *testing.T) {
	cfg := testConfig(t)
	raw := fmt.Sprintf("mcast://%v?iface=lo&ttl=0&feed=%d&linger=10ms", cfg.Group, cfg.Feed)
	ctx := context.Background()
	sub, err := transport.OpenSubscriber(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub, err := transport.OpenPublisher(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		ev, err := sub.Receive(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == transport.EventMessage {
			if string(ev.Message.Payload) != "hello" || ev.Message.Topic != "t" {
				t.Fatalf("%+v", ev.Message)
			}
			break
		}
	}
	pub.Close()
}

// TestConfigErrorsNameTheField: bad values, the engine's included, come
// back as a *ConfigError naming the Config field, before any socket is
// opened.
func TestConfigErrorsNameTheField(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		cfg   func(*Config)
		sub   bool
		field string
	}{
		{func(c *Config) { c.Sender.MTU = 100000 }, false, "Sender.MTU"},
		{func(c *Config) { c.Receiver.ReorderFrames = 1000 }, true, "Receiver.ReorderFrames"},
		{func(c *Config) { c.Interface = "nosuch0" }, false, "Interface"},
		{func(c *Config) { c.Interface = "nosuch0" }, true, "Interface"},
		{func(c *Config) { c.TTL, c.HostOnly = 300, false }, false, "TTL"},
		{func(c *Config) { c.Group = netip.MustParseAddrPort("10.1.2.3:7000") }, true, "Group"},
		{func(c *Config) { c.Spin = -time.Microsecond }, true, "Spin"},
		{func(c *Config) { c.Spin = 2 * time.Second }, true, "Spin"},
	}
	for _, tt := range tests {
		cfg := testConfig(t)
		tt.cfg(&cfg)
		var err error
		if tt.sub {
			_, err = NewSubscriber(ctx, cfg)
		} else {
			_, err = NewPublisher(ctx, cfg)
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrBadConfig) || ce.Field != tt.field {
			t.Errorf("%s: %v", tt.field, err)
		}
	}
}
