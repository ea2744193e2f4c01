package transport

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
)

// Endpoint is an opened transport URL, from which publishers and
// subscribers are made.
type Endpoint interface {
	Publisher(ctx context.Context) (Publisher, error)
	Subscriber(ctx context.Context) (Subscriber, error)
}

// OpenFunc turns a URL of a registered scheme into an Endpoint. It checks
// the URL's parameters and returns an error wrapping ErrBadURL when they
// are unusable.
type OpenFunc func(ctx context.Context, u *url.URL) (Endpoint, error)

var registry = struct {
	sync.RWMutex
	m map[string]OpenFunc
}{m: map[string]OpenFunc{}}

// Register makes a transport available under a URL scheme. It panics if
// the scheme is registered twice or open is nil, as both are programming
// errors found at init time.
func Register(scheme string, open OpenFunc) {
	registry.Lock()
	defer registry.Unlock()
	if open == nil {
		panic("transport: Register with nil OpenFunc for " + scheme)
	}
	if _, dup := registry.m[scheme]; dup {
		panic("transport: Register called twice for " + scheme)
	}
	registry.m[scheme] = open
}

// Schemes lists the registered URL schemes, sorted.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	s := make([]string, 0, len(registry.m))
	for k := range registry.m {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Open parses rawURL and opens it with the transport registered for its
// scheme.
func Open(ctx context.Context, rawURL string) (Endpoint, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &URLError{URL: rawURL, Err: fmt.Errorf("%w: %v", ErrBadURL, err)}
	}
	registry.RLock()
	open, ok := registry.m[u.Scheme]
	registry.RUnlock()
	if !ok {
		return nil, &URLError{URL: rawURL, Err: fmt.Errorf("%w %q (registered: %v)", ErrUnknownScheme, u.Scheme, Schemes())}
	}
	ep, err := open(ctx, u)
	if err != nil {
		return nil, &URLError{URL: rawURL, Err: err}
	}
	return ep, nil
}

// OpenPublisher is Open followed by Endpoint.Publisher.
func OpenPublisher(ctx context.Context, rawURL string) (Publisher, error) {
	ep, err := Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return ep.Publisher(ctx)
}

// OpenSubscriber is Open followed by Endpoint.Subscriber.
func OpenSubscriber(ctx context.Context, rawURL string) (Subscriber, error) {
	ep, err := Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return ep.Subscriber(ctx)
}
