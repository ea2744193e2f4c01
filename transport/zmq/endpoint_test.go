package zmq

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestEndpointChecked: an endpoint where nothing can ever answer (no
// host or port 0 to connect to, a port beyond 65535) is a ConfigError at
// once, naming Bind or Connect; what can work is accepted.
func TestEndpointChecked(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
		says  string
	}{
		{Config{Connect: []string{"tcp://127.0.0.1:0"}}, "Connect", "a connected endpoint needs a host and a port from 1 to 65535"},
		{Config{Connect: []string{"tcp://:5556"}}, "Connect", "needs a host"},
		{Config{Connect: []string{"tcp://*:5556"}}, "Connect", "needs a host"},
		{Config{Connect: []string{"tcp://127.0.0.1:70000"}}, "Connect", "port"},
		{Config{Bind: []string{"tcp://127.0.0.1:70000"}}, "Bind", "want a port from 0 to 65535"},
		{Config{Bind: []string{"tcp://127.0.0.1:http"}}, "Bind", "want a port from 0 to 65535"},
		{Config{Bind: []string{"tcp://127.0.0.1"}}, "Bind", "want tcp://HOST:PORT"},
	} {
		_, err := NewSubscriber(context.Background(), tc.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Want, tc.says) {
			t.Errorf("%+v: %v, want a ConfigError of %s saying %q", tc.cfg, err, tc.field, tc.says)
		}
	}
	for _, good := range []Config{
		{Bind: []string{"tcp://127.0.0.1:0"}},
		{Bind: []string{"tcp://[::1]:0"}},
		{Connect: []string{"tcp://127.0.0.1:1"}},
		{Connect: []string{"tcp://[::1]:65535"}},
	} {
		good.setDefaults()
		if err := good.validate(); err != nil {
			t.Errorf("%+v: %v", good, err)
		}
	}
}
