package logd

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake v1 only: v0 has the SASL tokens follow without Kafka
// framing (before KIP-152), which Kafka 4.0 dropped too (KIP-896);
// franz-go and librdkafka send v1 and then SaslAuthenticate.
func init() { supported[kmsg.SASLHandshake] = versionRange{1, 1} }

// saslHandshake chooses the SASL mechanism of the exchange that
// SaslAuthenticate carries. It answers with the mechanisms offered;
// UNSUPPORTED_SASL_MECHANISM for another one (or on a server without
// authentication, offering none); ILLEGAL_SASL_STATE once the
// connection has authenticated by SASL (re-authentication, KIP-368, is
// not offered: SaslAuthenticate answers a session lifetime of 0).
func (s *Server) saslHandshake(cl *client, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	a := cl.auth
	if a == nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = []string{}
		return resp
	}
	resp.SupportedMechanisms = s.auth.authn.Mechanisms()
	if a.viaSASL || a.session != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	session, err := s.auth.authn.Start(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	a.session = session
	return resp
}
