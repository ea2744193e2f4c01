package logd

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/auth"
)

// SaslAuthenticate v0 to v2 (v1 adds the session lifetime, v2 is
// flexible).
func init() { supported[kmsg.SASLAuthenticate] = versionRange{0, 2} }

// saslAuthenticate takes one message of the exchange SaslHandshake
// started. When the exchange completes, the connection is the user's.
// A refused exchange is answered SASL_AUTHENTICATION_FAILED, telling
// the client only that its credentials were refused, and the
// connection closes; a SaslAuthenticate without a handshake is
// ILLEGAL_SASL_STATE, and closes it too.
func (s *Server) saslAuthenticate(cl *client, req *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	a := cl.auth
	if a == nil || a.session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake choosing a mechanism")
		cl.hangUp = true
		return resp
	}
	session := a.session
	out, done, err := session.Step(req.SASLAuthBytes)
	if err != nil {
		a.session = nil
		s.auth.failures.Add(1)
		s.warn(&s.warnings.authFailed, "logd: authentication failed", "remote", a.conn.RemoteAddr().String(), "client", cl.id, "err", err)
		msg := "Authentication failed: invalid credentials with SASL mechanism " + session.Mechanism()
		if errors.Is(err, auth.ErrMalformed) {
			msg = "Authentication failed: malformed " + session.Mechanism() + " message"
		}
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		cl.hangUp = true
		return resp
	}
	resp.SASLAuthBytes = out
	if done {
		a.session = nil
		a.user, a.viaSASL = session.User(), true
		s.auth.successes.Add(1)
		s.cfg.Logger.Debug("logd: authenticated", "remote", a.conn.RemoteAddr().String(), "user", a.user.Name, "mechanism", session.Mechanism())
	}
	return resp
}

// saslInterrupted ends the SASL exchange of a connection that sent a
// request of key other than SaslAuthenticate after its SaslHandshake:
// as in Kafka, where the server then expects only SaslAuthenticate, the
// exchange fails (counted with the refused ones) and the connection
// closes once the answer, if any, is written.
func (s *Server) saslInterrupted(cl *client, key int16) {
	a := cl.auth
	mechanism := a.session.Mechanism()
	a.session, a.raw = nil, false
	s.auth.failures.Add(1)
	s.cfg.Logger.Debug("logd: closing connection: request other than SaslAuthenticate during a SASL exchange",
		"remote", a.conn.RemoteAddr().String(), "client", cl.id, "api", kmsg.NameForKey(key), "mechanism", mechanism)
	cl.hangUp = true
}
