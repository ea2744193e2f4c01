package logd

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake v0 and v1. After v1 the exchange travels in
// SaslAuthenticate requests (KIP-152), as franz-go and librdkafka send
// it. After v0 the SASL tokens follow as bare size-prefixed frames
// (sasl_raw.go), as kafka-python 2.0 and older Sarama send them.
// librdkafka (2.0.2 at least) refuses to authenticate unless the range
// includes v0, and then sends v1.
func init() { supported[kmsg.SASLHandshake] = versionRange{0, 1} }

// saslHandshake chooses the SASL mechanism of the exchange that
// SaslAuthenticate carries. It answers with the mechanisms offered;
// UNSUPPORTED_SASL_MECHANISM for another one (or on a server without
// authentication, offering none). Another SaslHandshake during the
// exchange is ILLEGAL_SASL_STATE, and the exchange fails and the
// connection closes, as in Kafka, where only SaslAuthenticate may
// follow the handshake (see saslInterrupted). Once the connection has
// authenticated by SASL a SaslHandshake is ILLEGAL_SASL_STATE and the
// connection stays open, as Kafka's broker answers it when
// re-authentication (KIP-368) is off: logd does not offer it
// (SaslAuthenticate answers a session lifetime of 0).
func (s *Server) saslHandshake(cl *client, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	a := cl.auth
	if a == nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = []string{}
		return resp
	}
	resp.SupportedMechanisms = s.auth.authn.Mechanisms()
	if a.session != nil {
		s.saslInterrupted(cl, kmsg.SASLHandshake.Int16())
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	if a.viaSASL {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	session, err := s.auth.authn.Start(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	a.session = session
	a.raw = req.Version == 0
	return resp
}
