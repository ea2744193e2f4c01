package transport_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"

	"github.com/brokerless/brokerless/transport"
)

// mem is a tiny transport for the examples: mem://NAME is a channel of
// messages within the process, numbered from 1.
var mem = struct {
	sync.Mutex
	chans map[string]chan transport.Message
}{chans: map[string]chan transport.Message{}}

func init() {
	transport.Register(transport.Scheme{
		Name:      "mem",
		Summary:   "a channel within the process, for examples",
		Form:      "mem://NAME[?buffer=N]",
		Semantics: transport.Ordered,
		Params:    []transport.Param{{Name: "buffer", Value: "N", Doc: "messages the channel holds (default 16)"}},
		Open: func(_ context.Context, u *url.URL, _ transport.Options) (transport.Endpoint, error) {
			size := 16
			if b := u.Query().Get("buffer"); b != "" {
				n, err := strconv.Atoi(b)
				if err != nil || n < 1 {
					return nil, fmt.Errorf("%w: buffer=%q: want a positive number", transport.ErrBadURL, b)
				}
				size = n
			}
			mem.Lock()
			defer mem.Unlock()
			c, ok := mem.chans[u.Host]
			if !ok {
				c = make(chan transport.Message, size)
				mem.chans[u.Host] = c
			}
			return memEndpoint{c}, nil
		},
	})
}

type memEndpoint struct{ c chan transport.Message }

func (e memEndpoint) Publisher(context.Context) (transport.Publisher, error) {
	return &memPub{c: e.c}, nil
}

func (e memEndpoint) Subscriber(context.Context) (transport.Subscriber, error) {
	return memSub(e), nil
}

type memSub struct{ c chan transport.Message }

type memPub struct {
	c   chan transport.Message
	seq uint64
}

func (p *memPub) Publish(ctx context.Context, m transport.Message) error {
	p.seq++
	m.Stream, m.Seq = transport.StreamID{Feed: 1, Session: 1}, p.seq
	select {
	case p.c <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *memPub) Flush(context.Context) error    { return nil }
func (p *memPub) Semantics() transport.Semantics { return transport.Ordered }
func (p *memPub) Close() error                   { return nil }
func (s memSub) Semantics() transport.Semantics  { return transport.Ordered }
func (s memSub) Close() error                    { return nil }
func (s memSub) Receive(ctx context.Context) (transport.Event, error) {
	select {
	case m := <-s.c:
		return transport.Event{Kind: transport.EventMessage, Message: m}, nil
	case <-ctx.Done():
		return transport.Event{}, ctx.Err()
	}
}

// Open a transport by URL: the scheme picks the transport, which a
// program registers by importing its package (here, mem:// is registered
// by this file's init). A URL whose scheme is unknown, or that names a
// parameter the scheme does not take, is refused.
func ExampleOpen() {
	ctx := context.Background()
	ep, err := transport.Open(ctx, "mem://prices?buffer=8")
	if err != nil {
		fmt.Println(err)
		return
	}
	pub, _ := ep.Publisher(ctx)
	sub, _ := ep.Subscriber(ctx)
	defer pub.Close()
	defer sub.Close()
	_ = pub.Publish(ctx, transport.Message{Topic: "AAPL", Payload: []byte("bid=189.21")})
	ev, _ := sub.Receive(ctx)
	fmt.Println(ev.Kind, ev.Message.Seq, ev.Message.Topic, string(ev.Message.Payload))

	for _, bad := range []string{"nats://127.0.0.1:4222/prices", "mem://prices?colour=red", "mem://prices?buffer=0"} {
		_, err := transport.Open(ctx, bad)
		fmt.Println(err)
	}
	// Output:
	// message 1 AAPL bid=189.21
	// transport: open "nats://127.0.0.1:4222/prices": transport: unknown URL scheme "nats" (registered: fake, mem)
	// transport: open "mem://prices?colour=red": transport: bad URL: unknown parameter "colour" (mem:// takes buffer)
	// transport: open "mem://prices?buffer=0": transport: bad URL: buffer="0": want a positive number
}

// Describe says what a scheme's URLs mean, as `brokerless help urls`
// prints it.
func ExampleDescribe() {
	s, _ := transport.Describe("mem")
	fmt.Println(s.Form, "—", s.Summary)
	fmt.Println("semantics:", s.Semantics)
	for _, p := range s.Params {
		fmt.Printf("%s=%s: %s\n", p.Name, p.Value, p.Doc)
	}
	// Output:
	// mem://NAME[?buffer=N] — a channel within the process, for examples
	// semantics: ordered
	// buffer=N: messages the channel holds (default 16)
}
