package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport"
	_ "github.com/brokerless/brokerless/transport/zmq" // zmq+tcp:// and zmq+ipc://
)

// openURL opens a transport URL whose transport logs to log. A URL that
// cannot be used is a mistake on the command line: one line saying why,
// and exit status 2.
func openURL(ctx context.Context, raw string, log *slog.Logger) (transport.Endpoint, error) {
	ep, err := transport.Open(ctx, raw, transport.WithLogger(log))
	if err != nil {
		return nil, urlError(raw, err)
	}
	return ep, nil
}

// urlParamOf maps the Config fields that transports fill from URL
// parameters, as their typed configuration errors name them, to those
// parameters.
var urlParamOf = map[string]string{
	"Group":      "group",
	"Interface":  "iface",
	"TTL":        "ttl",
	"Sender.MTU": "mtu",
	"Feed":       "feed",
}

// urlError explains why raw cannot be used, as one line: transports'
// errors about a URL, or about the configuration it described (an
// interface that does not exist is found only when the publisher or
// subscriber is made), are usage errors; others pass through.
func urlError(raw string, err error) error {
	var se settingError
	if errors.As(err, &se) {
		field, value, want := se.Setting()
		name, ok := urlParamOf[field]
		if !ok {
			name = field
		}
		switch name {
		case "group":
			return &oneLineError{fmt.Errorf("bad URL %q: group %v: %s", raw, value, want)}
		case "Bind", "Connect": // an endpoint of the URL
			return &oneLineError{fmt.Errorf("bad URL %q: %v: %s", raw, value, want)}
		}
		return &oneLineError{fmt.Errorf("bad URL %q: %s=%v: %s", raw, name, value, want)}
	}
	if !errors.Is(err, transport.ErrBadURL) && !errors.Is(err, transport.ErrUnknownScheme) && !errors.Is(err, multicast.ErrBadConfig) {
		return err
	}
	why := err.Error()
	var ue *transport.URLError
	if errors.As(err, &ue) {
		why = ue.Err.Error()
	}
	for _, prefix := range []string{transport.ErrBadURL.Error() + ": ", "transport: "} {
		why = strings.TrimPrefix(why, prefix)
	}
	why = strings.Replace(why, "unknown URL scheme", "unknown scheme", 1)
	return &oneLineError{fmt.Errorf("bad URL %q: %s", raw, why)}
}

// withParam sets the parameter key of raw to value, for a flag (flag,
// e.g. "--from") that stands for it. It refuses a scheme that takes no
// such parameter — what is must say why (e.g. "cannot replay") — and a
// URL that sets it already. A URL that does not parse, or whose scheme
// is unknown, is returned unchanged for Open to refuse.
func withParam(raw, key, value, flag, what string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, nil
	}
	s, ok := transport.Describe(u.Scheme)
	if !ok {
		return raw, nil
	}
	if _, ok := s.Param(key); !ok {
		return "", &oneLineError{fmt.Errorf("%s: %s:// %s (its URLs take no %s=; see brokerless help urls)", flag, u.Scheme, what, key)}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return raw, nil
	}
	if q.Has(key) {
		return "", &oneLineError{fmt.Errorf("%s and the URL's %s= both given: keep one", flag, key)}
	}
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
