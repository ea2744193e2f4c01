package logd

import (
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/auth"
)

// serverAuth is the server's side of authentication: the authenticator
// (nil when Config.Auth.Users is nil: no authentication), counters and
// a rate-limited log of refusals.
type serverAuth struct {
	authn *auth.Authenticator

	successes       atomic.Uint64 // SASL exchanges that authenticated
	certificates    atomic.Uint64 // connections authenticated by client certificate
	failures        atomic.Uint64 // SASL exchanges refused (or interrupted by another request)
	unauthenticated atomic.Uint64 // connections closed for a request before authentication
	oversized       atomic.Uint64 // connections closed for a request larger than MaxUnauthenticatedRequestBytes before authentication
	denied          atomic.Uint64 // topics, partitions or groups refused to an authenticated user
}

// setup takes the Config after its defaults are set, before the data
// directory is locked (keepDecoySecret completes it after). A bad field
// of Config.Auth is named as Config reaches it ("Auth.Mechanisms").
func (a *serverAuth) setup(cfg Config) error {
	if cfg.Auth.Users == nil {
		return nil
	}
	authn, err := auth.New(cfg.Auth)
	if err != nil {
		return nestConfigError("Auth.", err)
	}
	a.authn = authn
	return nil
}

// connAuth is one connection's authentication state.
type connAuth struct {
	conn    net.Conn      // for its TLS client certificate
	user    *auth.User    // nil until authenticated
	viaSASL bool          // user came from a SASL exchange (else from the certificate)
	session *auth.Session // the exchange a SaslHandshake started, until it ends
	raw     bool          // the exchange's tokens come without Kafka framing (SaslHandshake v0)
	checked bool          // the client certificate has been looked at
}

// newConnAuth returns the state of a new connection, nil when the
// server requires no authentication.
func (s *Server) newConnAuth(c net.Conn) *connAuth {
	if s.auth.authn == nil {
		return nil
	}
	return &connAuth{conn: c}
}

// authenticated reports whether the connection has a user, taking the
// one its verified TLS client certificate names (subject common name)
// when it has not authenticated otherwise. Only a certificate the
// listener verified against its client CAs counts.
func (s *Server) authenticated(a *connAuth) bool {
	if a.user != nil || a.checked {
		return a.user != nil
	}
	a.checked = true
	tc, ok := a.conn.(*tls.Conn)
	if !ok {
		return false
	}
	st := tc.ConnectionState()
	if !st.HandshakeComplete || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return false
	}
	if u, ok := s.auth.authn.Lookup(st.VerifiedChains[0][0].Subject.CommonName); ok {
		a.user = u
		s.auth.certificates.Add(1)
	}
	return a.user != nil
}

// writeAuthMetrics reports the authentication and authorization
// counters.
func (s *Server) writeAuthMetrics(p *promWriter) {
	a := &s.auth
	p.counter("logd_sasl_authentications_total", "SASL exchanges that authenticated a user.", a.successes.Load())
	p.counter("logd_sasl_authentication_failures_total", "SASL exchanges refused (bad credentials, malformed, or a request other than SaslAuthenticate after the handshake); each closed its connection.", a.failures.Load())
	p.counter("logd_certificate_authentications_total", "Connections authenticated by a TLS client certificate naming a user.", a.certificates.Load())
	p.counter("logd_unauthenticated_requests_total", "Connections closed for a request other than ApiVersions or SASL before authenticating.", a.unauthenticated.Load())
	p.counter("logd_unauthenticated_oversized_requests_total", "Connections closed for a request larger than MaxUnauthenticatedRequestBytes before authenticating (also counted in logd_bad_requests_total).", a.oversized.Load())
	p.counter("logd_authorization_denials_total", "Topics, partitions or groups of requests refused to an authenticated user.", a.denied.Load())
}

// preauthAPI reports whether a request of key may come before the
// connection authenticates: ApiVersions, SaslHandshake and
// SaslAuthenticate, as Kafka's SASL authenticator allows.
func preauthAPI(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	}
	return false
}

// errUnauthenticated: a request other than ApiVersions or SASL came
// before the connection authenticated; it was counted and logged.
var errUnauthenticated = errors.New("logd: request before authentication")

// preauthGate looks at the header of a request frame from a connection
// that has not authenticated (at least 8 bytes: readRequest checked)
// and refuses, counting and logging it, any request but ApiVersions
// and SASL, before its body is decoded: decoding allocates many times
// the frame (an array element takes a byte or two on the wire and tens
// in memory), which nobody should have the server do without
// credentials. Kafka's SASL authenticator likewise parses only the
// header of such a request, and closes the connection.
func (s *Server) preauthGate(a *connAuth, frame []byte) error {
	r := kbin.Reader{Src: frame}
	key, _, _ := r.Int16(), r.Int16(), r.Int32()
	if preauthAPI(key) {
		return nil
	}
	id := r.NullableString()
	if id == nil || !r.Ok() {
		id = new(string)
	}
	s.auth.unauthenticated.Add(1)
	s.warn(&s.warnings.unauthenticated, "logd: closing connection: request before authentication", "remote", a.conn.RemoteAddr().String(), "client", *id, "api", kmsg.NameForKey(key))
	return errUnauthenticated
}
