package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport/faultnet"
)

var demoCmd = command{
	name:     "demo",
	summary:  "one publisher, three subscribers (two of them lossy) on this machine: see loss recovered",
	synopsis: "[--duration 4s] [--rate 50000] [--seed 1]",
	about: `
Runs a multicast feed inside this process, on the loopback interface with
a TTL of 0, so nothing leaves this machine. Three subscribers join a random
group in 239.255.0.0/16: one clean, one that drops 5% of the datagrams it
receives on purpose, and one that drops 20% (and duplicates and reorders a
few). Then a publisher sends synthetic market ticks at --rate messages per
second for --duration, and closes.

The subscribers NACK what they lost and the publisher repairs it. When all
have caught up (or a short timeout passed) a table shows, per subscriber,
what it delivered, recovered, dropped as duplicate, the NACKs it sent and
suppressed, the gaps it reported, and the latency from publish to delivery;
then the publisher's totals.

The exit status is 0 when every subscriber delivered every message with no
gap, 1 otherwise, with the reason.`,
	examples: `
# The default: 50,000 ticks per second for 4 seconds.
brokerless demo

# A gentler run, for a slow machine.
brokerless demo --rate 5000 --duration 2s

# Push harder.
brokerless demo --rate 200000 --duration 10s`,
	run: runDemoCmd,
}

// demoOptions configure runDemo.
type demoOptions struct {
	duration time.Duration
	rate     float64
	seed     int64
	// drain bounds the wait for subscribers to catch up after the
	// publisher closed.
	drain time.Duration
	log   *slog.Logger
}

const defaultDrain = 3 * time.Second

// errInterrupted reports a demo cut short by its context.
var errInterrupted = errors.New("interrupted")

// errDemoFailed reports a demo in which some message was not delivered.
var errDemoFailed = errors.New("not every message was delivered")

func runDemoCmd(ctx context.Context, inv *invocation) error {
	o := demoOptions{drain: defaultDrain, log: inv.log}
	fs := inv.flags()
	fs.DurationVar(&o.duration, "duration", 4*time.Second, "how long the publisher publishes")
	fs.Float64Var(&o.rate, "rate", 50000, "ticks per second")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the ticks and of the injected faults")
	if err := inv.parse(fs); err != nil {
		return err
	}
	switch {
	case o.duration <= 0:
		return usagef("--duration %v: want a positive duration, e.g. 4s", o.duration)
	case !(o.rate > 0):
		return usagef("--rate %v: want a positive number of ticks per second", o.rate)
	}
	res, err := runDemo(ctx, o, inv.out)
	if err != nil {
		return err
	}
	if len(res.problems()) > 0 {
		return errDemoFailed
	}
	return nil
}

// demoResult is what a demo run observed.
type demoResult struct {
	group     netip.AddrPort
	published uint64
	pub       multicast.PublisherStats
	subs      []subResult
}

// runDemo runs the demo and writes its report to out. The error is for a
// demo that could not run or was interrupted; whether every message was
// delivered is in the result (see demoResult.problems).
func runDemo(ctx context.Context, o demoOptions, out io.Writer) (demoResult, error) {
	res := demoResult{group: randomGroup()}
	base := multicast.Config{Group: res.group, Interface: "lo", HostOnly: true, Logger: o.log}

	subs, err := startDemoSubs(ctx, base, demoProfiles(o.seed))
	if err != nil {
		return res, err
	}
	recvCtx, stopReceiving := context.WithCancel(context.Background())
	for _, s := range subs {
		go s.receive(recvCtx)
	}
	finish := func() {
		stopReceiving()
		for _, s := range subs {
			<-s.done
			res.subs = append(res.subs, s.result())
			s.sub.Close()
		}
	}

	pub, err := multicast.NewPublisher(ctx, base)
	if err != nil {
		finish()
		return res, err
	}
	writeIntro(out, o, res.group, subs)
	p := pacer{start: time.Now(), rate: o.rate, limit: limitFor(o.rate, o.duration)}
	sent, pubErr := publishTicks(ctx, pub, newTickGen(uint64(o.seed)), p)
	closeErr := pub.Close()
	res.published, res.pub = sent, pub.Stats()

	drainCtx, cancel := context.WithTimeout(ctx, o.drain)
	for _, s := range subs {
		s.await(drainCtx, res.published)
	}
	cancel()
	finish()
	writeReport(out, &res)
	switch {
	case ctx.Err() != nil:
		return res, errInterrupted
	case pubErr != nil:
		return res, fmt.Errorf("publishing: %w", pubErr)
	case closeErr != nil:
		return res, fmt.Errorf("closing the publisher: %w", closeErr)
	}
	return res, nil
}

// startDemoSubs joins one subscriber per profile.
func startDemoSubs(ctx context.Context, base multicast.Config, profiles []demoProfile) ([]*demoSub, error) {
	var subs []*demoSub
	for _, p := range profiles {
		cfg := base
		if faults := p.faults; !faults.Zero() {
			cfg.Filter = func() (multicast.DatagramFilter, error) { return faultnet.NewFilter(faults) }
		}
		sub, err := multicast.NewSubscriber(ctx, cfg)
		if err != nil {
			for _, s := range subs {
				s.sub.Close()
			}
			return nil, fmt.Errorf("subscriber %s: %w", p.name, err)
		}
		subs = append(subs, newDemoSub(p, sub))
	}
	return subs, nil
}

// randomGroup picks a group in 239.255.0.0/16, the IPv4 local scope, and
// a port from 20000 to 32767: below Linux's ephemeral ports (32768 and
// up), which UDP client sockets take bound to the wildcard address, so
// that the group's bind does not collide with one.
func randomGroup() netip.AddrPort {
	addr := netip.AddrFrom4([4]byte{239, 255, byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
	return netip.AddrPortFrom(addr, uint16(20000+rand.IntN(12768)))
}
