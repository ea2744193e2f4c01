package transport_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

type fakeEndpoint struct {
	u *url.URL
	o transport.Options
}

func (fakeEndpoint) Publisher(context.Context) (transport.Publisher, error)   { return nil, nil }
func (fakeEndpoint) Subscriber(context.Context) (transport.Subscriber, error) { return nil, nil }

func init() {
	transport.Register(transport.Scheme{
		Name: "fake",
		Open: func(_ context.Context, u *url.URL, o transport.Options) (transport.Endpoint, error) {
			if u.Query().Get("bad") != "" {
				return nil, transport.ErrBadURL
			}
			return fakeEndpoint{u, o}, nil
		},
		Summary: "a transport that opens nothing",
		Params:  []transport.Param{{Name: "bad", Value: "X", Doc: "refuse the URL"}, {Name: "y", Value: "Y", Doc: "ignored"}},
	})
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	ep, err := transport.Open(ctx, "fake://host:1/x?y=z")
	if err != nil {
		t.Fatal(err)
	}
	if ep.(fakeEndpoint).u.Host != "host:1" || ep.(fakeEndpoint).o.Logger != nil {
		t.Fatalf("%+v", ep)
	}
	log := slog.New(slog.DiscardHandler)
	if ep, err = transport.Open(ctx, "fake://host:1/x", transport.WithLogger(log)); err != nil || ep.(fakeEndpoint).o.Logger != log {
		t.Fatalf("Open with a logger: %+v, %v: the scheme's Open did not get it", ep, err)
	}
	for _, c := range []struct {
		url  string
		want error
		says string
	}{
		{"nope://x", transport.ErrUnknownScheme, `"nope" (registered: `},
		{"fake://x?bad=1", transport.ErrBadURL, ""},
		{"fake://%zz", transport.ErrBadURL, ""},
		{"fake://x?colour=red", transport.ErrBadURL, `unknown parameter "colour" (fake:// takes bad, y)`},
		{"fake://x?y=1&%zz=2", transport.ErrBadURL, "query"},
	} {
		_, err := transport.Open(ctx, c.url)
		var ue *transport.URLError
		if !errors.Is(err, c.want) || !errors.As(err, &ue) || ue.URL != c.url || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.url, err, c.want, c.says)
		}
	}
}

func TestDescribe(t *testing.T) {
	s, ok := transport.Describe("fake")
	if !ok || s.Summary != "a transport that opens nothing" {
		t.Fatalf("%+v %v", s, ok)
	}
	if p, ok := s.Param("y"); !ok || p.Doc != "ignored" {
		t.Errorf("param y: %+v %v", p, ok)
	}
	if _, ok := s.Param("z"); ok {
		t.Error("param z found")
	}
	if _, ok := transport.Describe("nope"); ok {
		t.Error("nope described")
	}
	if got := transport.Schemes(); !strings.Contains(strings.Join(got, " "), "fake") {
		t.Errorf("schemes %v", got)
	}
}

func TestRegisterPanics(t *testing.T) {
	open := func(context.Context, *url.URL, transport.Options) (transport.Endpoint, error) { return nil, nil }
	for name, s := range map[string]transport.Scheme{
		"twice":   {Name: "fake", Open: open},
		"no name": {Open: open},
		"no open": {Name: "fake2"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			transport.Register(s)
		})
	}
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
