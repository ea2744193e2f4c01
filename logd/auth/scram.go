package auth

import (
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
)

// scramSession is one SCRAM exchange, run by xdg-go/scram's server
// conversation over the stored credentials: client-first → server-first
// (nonce, salt, iterations), client-final (proof) → server-final
// (server signature). One client quirk is handled beside it (see
// doubledNonceFinal).
type scramSession struct {
	a         *Authenticator
	mechanism string
	conv      *scram.ServerConversation
	name      string     // the user name the client gave
	real      bool       // whether name has a stored credential
	cred      Credential // name's credential, or its decoy
	steps     int
	user      *User

	// Kept from the first step for doubledNonceFinal.
	gs2Header   string // "n,," or "n,a=authzid,"
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // client nonce + server nonce, as sent in serverFirst
	clientNonce string
	serverNonce string // the random part, from randomNonce
}

// nonceBytes is the random part of the server's nonce (xdg-go's default
// length).
const nonceBytes = 24

// randomNonce is the server's part of a SCRAM nonce: base64 (which has
// no ',') of nonceBytes from Rand.
func (a *Authenticator) randomNonce() (string, error) {
	raw := make([]byte, nonceBytes)
	if err := a.read(raw); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

func (a *Authenticator) startScram(mechanism string) (*scramSession, error) {
	nonce, err := a.nonce()
	if err != nil {
		return nil, err
	}
	s := &scramSession{a: a, mechanism: mechanism, serverNonce: nonce}
	srv, err := hashOf(mechanism).NewServer(func(name string) (scram.StoredCredentials, error) {
		c, real := a.credential(name, mechanism)
		s.name, s.real, s.cred = name, real, c
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
			StoredKey:  c.StoredKey,
			ServerKey:  c.ServerKey,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	s.conv = srv.WithNonceGenerator(func() string { return nonce }).NewConversation()
	return s, nil
}

func (s *scramSession) step(in []byte) ([]byte, bool, error) {
	s.steps++
	if s.steps > 2 || s.conv.Done() {
		return nil, true, s.fail(ErrMalformed, "message after the exchange ended")
	}
	if s.steps == 2 && s.doubledNonce(string(in)) {
		return s.doubledNonceFinal(string(in))
	}
	out, err := s.conv.Step(string(in))
	if err != nil {
		if out == scram.ErrInvalidProof {
			return nil, true, s.badProof()
		}
		return nil, true, s.fail(ErrMalformed, err.Error())
	}
	if !s.conv.Done() {
		s.remember(string(in), out)
		if !printableNonce(s.clientNonce) {
			return nil, true, s.fail(ErrMalformed, fmt.Sprintf("client nonce %q: want printable characters but ','", s.clientNonce))
		}
		return []byte(out), false, nil
	}
	if err := s.authorize(s.conv.Valid()); err != nil {
		return nil, true, err
	}
	return []byte(out), true, nil
}

// authorize ends a verified exchange: the user must exist (a decoy can
// never pass the proof, but is not trusted to fail) and may not ask to
// act as someone else.
func (s *scramSession) authorize(valid bool) error {
	u, ok := s.a.users.Lookup(s.name)
	switch {
	case !valid || !s.real || !ok:
		return s.fail(ErrBadCredentials, "proof not verified")
	case s.conv.AuthzID() != "" && s.conv.AuthzID() != s.name:
		return s.fail(ErrBadCredentials, fmt.Sprintf("may not act as %q", s.conv.AuthzID()))
	}
	s.user = u
	return nil
}

func (s *scramSession) badProof() error {
	if !s.real {
		return s.fail(ErrBadCredentials, "no such user, or no "+s.mechanism+" credential")
	}
	return s.fail(ErrBadCredentials, "wrong password")
}

func (s *scramSession) fail(kind error, detail string) error {
	return &AuthError{Mechanism: s.mechanism, User: s.name, Err: kind, Detail: detail}
}

// remember keeps what the first step exchanged (which xdg-go has
// already parsed and accepted).
func (s *scramSession) remember(clientFirst, serverFirst string) {
	// gs2-header = cbind-flag "," [authzid] ",": the authzid has its
	// commas escaped, so the header ends at the second comma.
	i := strings.IndexByte(clientFirst, ',')
	j := strings.IndexByte(clientFirst[i+1:], ',') + i + 1
	s.gs2Header, s.clientFirst, s.serverFirst = clientFirst[:j+1], clientFirst[j+1:], serverFirst
	s.nonce = strings.TrimPrefix(strings.SplitN(serverFirst, ",", 2)[0], "r=")
	s.clientNonce = strings.TrimSuffix(s.nonce, s.serverNonce)
}

// printableNonce reports whether a client nonce is RFC 5802 §7's
// c-nonce: one or more printable characters (0x21 to 0x7E) but ',',
// as Kafka's ScramMessages requires. xdg-go takes any, even none.
func printableNonce(n string) bool {
	for i := 0; i < len(n); i++ {
		if n[i] < 0x21 || n[i] > 0x7e || n[i] == ',' {
			return false
		}
	}
	return n != ""
}

// doubledNonce reports whether a client-final message carries the
// client nonce twice: "r=" client nonce, then the whole nonce of the
// server-first message (which already starts with the client nonce).
// librdkafka did this from v0.0.99 until its pull request #4895 (2024;
// Debian's librdkafka 2.0.2 still does), and Kafka accepts it: since
// the fix of CVE-2024-56128 (Kafka 3.8.1) it checks that the client's
// nonce ends with the server's rather than equals it.
func (s *scramSession) doubledNonce(clientFinal string) bool {
	if s.nonce == "" || s.clientNonce == "" {
		return false
	}
	_, rest, ok := strings.Cut(clientFinal, ",")
	return ok && strings.HasPrefix(rest, "r="+s.clientNonce+s.nonce+",")
}

// doubledNonceFinal verifies such a client-final message as RFC 5802
// §3 does, over the message as the client sent it (its proof covers
// the doubled nonce): channel binding "c=" must be the base64 of the
// gs2 header (no channel binding), the proof is the last attribute,
// AuthMessage = client-first-bare "," server-first "," client-final
// without proof, ClientKey = proof XOR HMAC(StoredKey, AuthMessage)
// must hash to StoredKey (compared in constant time), and the answer
// is "v=" base64(HMAC(ServerKey, AuthMessage)). xdg-go's conversation,
// which requires the nonce to be exactly the server's, is not used for
// this step.
func (s *scramSession) doubledNonceFinal(clientFinal string) ([]byte, bool, error) {
	h := hashOf(s.mechanism)
	p := strings.LastIndex(clientFinal, ",p=")
	if p < 0 || !strings.HasPrefix(clientFinal, "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header))+",") {
		return nil, true, s.fail(ErrMalformed, "client-final without proof or with channel binding")
	}
	proof, err := base64.StdEncoding.DecodeString(clientFinal[p+3:])
	if err != nil || len(proof) != h().Size() {
		return nil, true, s.fail(ErrMalformed, "client proof is not a base64 hash")
	}
	authMessage := []byte(s.clientFirst + "," + s.serverFirst + "," + clientFinal[:p])
	mac := hmac.New(h, s.cred.StoredKey)
	mac.Write(authMessage)
	clientKey := mac.Sum(nil)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	storedKey := h()
	storedKey.Write(clientKey)
	if !hmac.Equal(storedKey.Sum(nil), s.cred.StoredKey) {
		return nil, true, s.badProof()
	}
	if err := s.authorize(true); err != nil {
		return nil, true, err
	}
	mac = hmac.New(h, s.cred.ServerKey)
	mac.Write(authMessage)
	s.steps = 3 // over: a further message is refused
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac.Sum(nil))), true, nil
}
