package transport_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

type fakeEndpoint struct{ u *url.URL }

func (fakeEndpoint) Publisher(context.Context) (transport.Publisher, error)   { return nil, nil }
func (fakeEndpoint) Subscriber(context.Context) (transport.Subscriber, error) { return nil, nil }

func init() {
	transport.Register("fake", func(_ context.Context, u *url.URL) (transport.Endpoint, error) {
		if u.Query().Get("bad") != "" {
			return nil, transport.ErrBadURL
		}
		return fakeEndpoint{u}, nil
	})
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	ep, err := transport.Open(ctx, "fake://host:1/x?y=z")
	if err != nil {
		t.Fatal(err)
	}
	if ep.(fakeEndpoint).u.Host != "host:1" {
		t.Fatalf("%+v", ep)
	}
	for _, c := range []struct {
		url  string
		want error
	}{
		{"nope://x", transport.ErrUnknownScheme},
		{"fake://x?bad=1", transport.ErrBadURL},
		{"fake://%zz", transport.ErrBadURL},
	} {
		_, err := transport.Open(ctx, c.url)
		var ue *transport.URLError
		if !errors.Is(err, c.want) || !errors.As(err, &ue) || ue.URL != c.url {
			t.Errorf("%s: %v, want %v", c.url, err, c.want)
		}
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	transport.Register("fake", func(context.Context, *url.URL) (transport.Endpoint, error) { return nil, nil })
}

func TestSemanticsString(t *testing.T) {
	s := transport.Ordered | transport.Retransmit
	if s.String() != "ordered|retransmit" || !s.Has(transport.Ordered) || s.Has(transport.Durable) {
		t.Fatal(s)
	}
	if transport.Semantics(0).String() != "none" {
		t.Fatal("zero")
	}
}

func TestGapString(t *testing.T) {
	g := transport.Gap{Stream: transport.StreamID{Feed: 1, Session: 2}, From: 5, To: 9, Reason: transport.GapTimeout}
	if g.Len() != 5 || g.String() != "gap 1/0000000000000002 seq 5..9 (5 lost): recovery timed out" {
		t.Fatal(g.String())
	}
}
