package logd

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"
)

// maxRawToken bounds a SASL token sent without Kafka framing; the
// longest a PLAIN or SCRAM client sends is far smaller.
const maxRawToken = 4096

// rawSASL takes one SASL token of n bytes that follows a SaslHandshake
// v0 without Kafka framing, and writes the server's token back the same
// way: a 4-byte size, then the bytes (an empty one when PLAIN
// succeeds). When the exchange completes, Kafka framing resumes. There
// is no way to carry an error in this form, so a refused exchange, or a
// token longer than maxRawToken, closes the connection, as Kafka does.
// An error means the connection must close.
func (s *Server) rawSASL(cl *client, c net.Conn, r io.Reader, n int64) error {
	a := cl.auth
	if n > maxRawToken {
		s.auth.failures.Add(1)
		s.warn(&s.warnings.authFailed, "logd: authentication failed: SASL token too long", "remote", c.RemoteAddr().String(), "size", n, "max", maxRawToken)
		return errRawSASL
	}
	token := make([]byte, n)
	if _, err := io.ReadFull(r, token); err != nil {
		return &slowError{err} // a request that did not arrive whole
	}
	session := a.session
	out, done, err := session.Step(token)
	if err != nil {
		a.session, a.raw = nil, false
		s.auth.failures.Add(1)
		s.warn(&s.warnings.authFailed, "logd: authentication failed", "remote", c.RemoteAddr().String(), "client", cl.id, "err", err)
		return errRawSASL
	}
	if done {
		a.session, a.raw = nil, false
		a.user, a.viaSASL = session.User(), true
		s.auth.successes.Add(1)
		s.cfg.Logger.Debug("logd: authenticated", "remote", c.RemoteAddr().String(), "user", a.user.Name, "mechanism", session.Mechanism(), "handshake", 0)
	}
	_ = c.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(out)), uint32(len(out)))
	if _, err := c.Write(append(frame, out...)); err != nil {
		return &writeError{err}
	}
	return nil
}

// errRawSASL: a bare SASL token was refused; the failure is counted and
// logged where it happened.
var errRawSASL = errors.New("logd: SASL exchange after SaslHandshake v0 refused")
