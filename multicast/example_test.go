package multicast_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// exampleGroup is a group of the local scope (239.255.0.0/16) and a
// port, drawn at random so that examples run at the same time on one
// machine do not hear each other.
func exampleGroup() string {
	return fmt.Sprintf("239.255.%d.%d:%d", rand.IntN(256), 1+rand.IntN(254), 20000+rand.IntN(12768))
}

// A publisher and a subscriber opened by URL, on the loopback interface
// with TTL 0: the datagrams never leave this machine.
func Example_openURL() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := transport.Open(ctx, "mcast://"+exampleGroup()+"?iface=lo&ttl=0&feed=7")
	if err != nil {
		fmt.Println(err)
		return
	}
	sub, err := ep.Subscriber(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	pub, err := ep.Publisher(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tick := range []string{"AAPL 187.25", "MSFT 411.10"} {
		if err := pub.Publish(ctx, transport.Message{Topic: "ticks", Payload: []byte(tick)}); err != nil {
			fmt.Println(err)
		}
	}
	pub.Close() // flushes, answers NACKs for a while, and ends the stream

	for {
		ev, err := sub.Receive(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Kind {
		case transport.EventStreamStart:
			fmt.Println("stream start: feed", ev.Start.Stream.Feed)
		case transport.EventMessage:
			fmt.Println(ev.Message.Seq, ev.Message.Topic, string(ev.Message.Payload))
		case transport.EventGap:
			fmt.Println(ev.Gap)
		case transport.EventStreamEnd:
			fmt.Println("stream end: last seq", ev.End.LastSeq)
			return
		}
	}
	// Output:
	// stream start: feed 7
	// 1 ticks AAPL 187.25
	// 2 ticks MSFT 411.10
	// stream end: last seq 2
}

// A publish with a receipt: done is called once the datagram carrying
// the message has been written to the socket, with where the message
// landed — its stream (feed and session) and sequence number.
func ExamplePublisher_PublishReceipt() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub, err := transport.OpenPublisher(ctx, "mcast://"+exampleGroup()+"?iface=lo&ttl=0&feed=7")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pub.Close()

	rp, ok := pub.(transport.ReceiptPublisher)
	if !ok {
		fmt.Println("no receipts")
		return
	}
	receipts := make(chan transport.Receipt, 2)
	for _, payload := range []string{"first", "a message of 3,000 bytes, in three datagrams"} {
		m := transport.Message{Payload: []byte(payload)}
		if len(payload) > 10 {
			m.Payload = make([]byte, 3000)
		}
		err := rp.PublishReceipt(ctx, m, func(r transport.Receipt, err error) {
			if err != nil {
				fmt.Println(err)
			}
			receipts <- r // done must not block: the channel has room
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	for range 2 {
		r := <-receipts
		fmt.Printf("sent: feed %d, seq %d, same session as the publisher: %v\n",
			r.Stream.Feed, r.Seq, r.Stream == pub.(*multicast.Publisher).Stream())
	}
	// Output:
	// sent: feed 7, seq 1, same session as the publisher: true
	// sent: feed 7, seq 2, same session as the publisher: true
}

// A subscriber that rehearses loss: a faultnet.Filter drops 20% of what
// it receives, before its recovery engine sees it; NACKs and repairs
// still deliver every message, in order.
func ExampleConfig_filter() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := multicast.Config{
		Group:     netip.MustParseAddrPort(exampleGroup()),
		Interface: "lo",
		HostOnly:  true, // TTL 0
	}
	lossy := cfg
	lossy.Filter = func() (multicast.DatagramFilter, error) {
		return faultnet.NewFilter(faultnet.Faults{Seed: 1, Loss: 0.2})
	}
	sub, err := multicast.NewSubscriber(ctx, lossy)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	pub, err := multicast.NewPublisher(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pub.Close()

	const n = 1000
	go func() {
		for i := range n {
			_ = pub.Publish(ctx, transport.Message{Payload: fmt.Appendf(nil, "message %d", i)})
		}
		_ = pub.Flush(ctx)
	}()
	inOrder, gaps := 0, 0
	for inOrder+gaps < n {
		ev, err := sub.Receive(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Kind {
		case transport.EventMessage:
			if string(ev.Message.Payload) == fmt.Sprintf("message %d", inOrder) {
				inOrder++
			}
		case transport.EventGap:
			gaps += int(ev.Gap.Len())
		}
	}
	st := sub.Stats()
	fmt.Printf("%d messages in order, %d lost; datagrams dropped on purpose: %v, messages recovered: %v\n",
		inOrder, gaps, st.FilterDrops > 0, st.Recovered > 0)
	// Output:
	// 1000 messages in order, 0 lost; datagrams dropped on purpose: true, messages recovered: true
}

// A URL that cannot work is refused when opened, with one error that
// says why.
func Example_badURL() {
	ctx := context.Background()
	for _, raw := range []string{
		"mcast://10.0.0.1:7000?iface=lo",
		"mcast://239.1.2.3:7000?ttl=300",
		"mcast://239.1.2.3:7000?tll=0",
	} {
		_, err := transport.Open(ctx, raw)
		fmt.Println(errors.Is(err, transport.ErrBadURL), err)
	}
	// Output:
	// true transport: open "mcast://10.0.0.1:7000?iface=lo": transport: bad URL: group 10.0.0.1 is not a multicast address: want one in 224.0.0.0/4, e.g. 239.1.2.3:7000
	// true transport: open "mcast://239.1.2.3:7000?ttl=300": transport: bad URL: ttl="300": want an integer from 0 to 255
	// true transport: open "mcast://239.1.2.3:7000?tll=0": transport: bad URL: unknown parameter "tll" (mcast:// takes iface, feed, ttl, repairs, offload, join, mtu, rcvbuf, sndbuf, linger, keyfile, loss, dup, reorder, seed, flow, flow-tag, flow-min, flow-timeout, archive, spin)
}

// Multicast does not replay: a subscriber starts at the live edge or,
// with join=earliest, at what the publisher's retransmit window still
// holds. A URL asking for a position is refused.
func ExampleParseURL() {
	u, err := url.Parse("mcast://239.1.2.3:7000?join=earliest&from=0")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = multicast.ParseURL(u)
	fmt.Println(err)
	// Output:
	// transport: bad URL: from="0": multicast does not replay: a subscriber starts at the live edge, or with join=earliest at the oldest message the publisher's retransmit window still holds; replay from a position needs an archive: archive=URL with join=earliest|seq:N|time:T
}
