package transport

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
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
// are unusable. What a URL cannot say (where to log) comes in o.
type OpenFunc func(ctx context.Context, u *url.URL, o Options) (Endpoint, error)

// Options are what a program gives a transport it opens by URL besides
// the URL: what no URL parameter can name.
type Options struct {
	// Logger receives what the transport logs (a clamped socket buffer,
	// a broker it cannot reach), as its Config's Logger would. Default:
	// the transport's own (they discard it).
	Logger *slog.Logger
}

// Option sets one of Options.
type Option func(*Options)

// WithLogger makes the opened transport log to l.
func WithLogger(l *slog.Logger) Option {
	return func(o *Options) { o.Logger = l }
}

// Scheme is what a transport registers: how to open its URLs, and what
// they mean, for people (`brokerless help urls` prints it) and for
// programs (a command can tell whether a scheme replays before it opens
// a URL).
type Scheme struct {
	// Name is the URL scheme, e.g. "mcast". Required.
	Name string
	// Open opens the scheme's URLs. Required.
	Open OpenFunc
	// Summary says in one line what the transport is.
	Summary string
	// Form is the shape of the scheme's URLs, e.g.
	// "mcast://GROUP:PORT[?PARAM=VALUE&...]".
	Form string
	// Semantics are the guarantees with the default parameters.
	Semantics Semantics
	// Notes say what the guarantees mean in practice and which
	// parameters change them.
	Notes string
	// Params lists every query parameter the scheme takes. Open refuses
	// any other with ErrBadURL, so a misspelt parameter is an error,
	// never silently ignored; a scheme that takes none lists none.
	Params []Param
	// SourceDefaults are parameters that a pipe (or recorder) reading
	// from a URL of this scheme sets when the URL does not: what makes a
	// restarted reader get what its source still holds (for multicast,
	// join=earliest: the publisher's retransmit window).
	SourceDefaults map[string]string
	// Examples are URLs with a comment each, shown under the scheme.
	Examples []Example
}

// Param is one query parameter of a scheme.
type Param struct {
	// Name is the parameter's key, e.g. "ttl".
	Name string
	// Value says what it takes, e.g. "0..255" or "earliest|latest".
	Value string
	// Doc says what it does, and its default.
	Doc string
}

// Example is a URL of a scheme and what it means.
type Example struct {
	URL, Doc string
}

// Param returns the scheme's parameter called name.
func (s *Scheme) Param(name string) (Param, bool) {
	i := slices.IndexFunc(s.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return s.Params[i], true
}

// checkParams refuses a query that does not parse or names a parameter
// the scheme does not take.
func (s *Scheme) checkParams(rawQuery string) error {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fmt.Errorf("%w: query %q: %v", ErrBadURL, rawQuery, err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if _, ok := s.Param(k); !ok {
			return fmt.Errorf("%w: unknown parameter %q (%s:// takes %s)", ErrBadURL, k, s.Name, s.paramNames())
		}
	}
	return nil
}

func (s *Scheme) paramNames() string {
	if len(s.Params) == 0 {
		return "none"
	}
	names := make([]string, len(s.Params))
	for i, p := range s.Params {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

var registry = struct {
	sync.RWMutex
	m map[string]Scheme
}{m: map[string]Scheme{}}

// Register makes a transport available under a URL scheme. It panics if
// the scheme is registered twice, or has no name or no Open, as these
// are programming errors found at init time.
func Register(s Scheme) {
	registry.Lock()
	defer registry.Unlock()
	if s.Name == "" || s.Open == nil {
		panic(fmt.Sprintf("transport: Register needs a Name and an Open (scheme %q)", s.Name))
	}
	if _, dup := registry.m[s.Name]; dup {
		panic("transport: Register called twice for " + s.Name)
	}
	s.Params = slices.Clone(s.Params)
	s.Examples = slices.Clone(s.Examples)
	registry.m[s.Name] = s
}

// Schemes lists the registered URL schemes, sorted.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Sorted(maps.Keys(registry.m))
}

// Describe returns what the transport registered for scheme.
func Describe(scheme string) (Scheme, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.m[scheme]
	return s, ok
}

// Open parses rawURL and opens it with the transport registered for its
// scheme, and refuses it if it names a parameter the scheme does not
// take (Scheme.Params).
func Open(ctx context.Context, rawURL string, opts ...Option) (Endpoint, error) {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &URLError{URL: rawURL, Err: fmt.Errorf("%w: %v", ErrBadURL, err)}
	}
	s, ok := Describe(u.Scheme)
	if !ok {
		return nil, &URLError{URL: rawURL, Err: fmt.Errorf("%w %q (registered: %s)", ErrUnknownScheme, u.Scheme, strings.Join(Schemes(), ", "))}
	}
	ep, err := s.Open(ctx, u, o)
	if err == nil {
		// After Open, whose own explanation of a parameter it refuses
		// is the better one: this catches what a transport ignores.
		err = s.checkParams(u.RawQuery)
	}
	if err != nil {
		return nil, &URLError{URL: rawURL, Err: err}
	}
	return ep, nil
}

// OpenPublisher is Open followed by Endpoint.Publisher.
func OpenPublisher(ctx context.Context, rawURL string, opts ...Option) (Publisher, error) {
	ep, err := Open(ctx, rawURL, opts...)
	if err != nil {
		return nil, err
	}
	return ep.Publisher(ctx)
}

// OpenSubscriber is Open followed by Endpoint.Subscriber.
func OpenSubscriber(ctx context.Context, rawURL string, opts ...Option) (Subscriber, error) {
	ep, err := Open(ctx, rawURL, opts...)
	if err != nil {
		return nil, err
	}
	return ep.Subscriber(ctx)
}
