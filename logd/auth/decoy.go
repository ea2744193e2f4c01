package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// decoyShape is the public part of a stored credential, what a
// server-first message shows: its iteration count and salt length.
type decoyShape struct{ iterations, saltBytes int }

// decoyShapes lists, per SCRAM mechanism, the shapes of the users'
// credentials, in user name order.
func decoyShapes(us *Users) map[string][]decoyShape {
	shapes := map[string][]decoyShape{}
	for _, u := range us.List() {
		for _, m := range ScramMechanisms {
			if c, ok := u.SCRAM[m]; ok {
				shapes[m] = append(shapes[m], decoyShape{c.Iterations, len(c.Salt)})
			}
		}
	}
	return shapes
}

// usersSecret derives a decoy secret from the users' stored SCRAM keys:
// nil when there are none.
func usersSecret(us *Users) []byte {
	m := hmac.New(sha256.New, []byte("brokerless logd decoy secret"))
	n := 0
	for _, u := range us.List() {
		for _, mech := range ScramMechanisms {
			c, ok := u.SCRAM[mech]
			if !ok {
				continue
			}
			for _, field := range [][]byte{[]byte(u.Name), []byte(mech), c.StoredKey, c.ServerKey} {
				m.Write(binary.BigEndian.AppendUint32(nil, uint32(len(field))))
				m.Write(field)
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return m.Sum(nil)
}

// credential returns name's stored credential for mechanism, or, when
// the user does not exist or has none, a decoy that no password
// matches, indistinguishable from a real one without the secret: its
// salt and keys are derived from the Authenticator's secret (stable
// across restarts when Config.DecoySecret is), and its iteration count
// and salt length are those of a user's credential for the mechanism,
// chosen by the name (DefaultIterations and DefaultSaltBytes when no
// user has one), so decoys show the counts real users show, as often.
// real says which it is.
func (a *Authenticator) credential(name, mechanism string) (c Credential, real bool) {
	if u, ok := a.users.Lookup(name); ok {
		if c, ok := u.SCRAM[mechanism]; ok {
			return c, true
		}
	}
	derive := func(label string, n int) []byte {
		m := hmac.New(sha256.New, a.secret)
		fmt.Fprintf(m, "%s\x00%s\x00%s", label, mechanism, name)
		out := m.Sum(nil)
		for len(out) < n {
			m.Write(out)
			out = m.Sum(out)
		}
		return out[:n]
	}
	shape := decoyShape{DefaultIterations, DefaultSaltBytes}
	if shapes := a.decoys[mechanism]; len(shapes) > 0 {
		shape = shapes[binary.BigEndian.Uint64(derive("shape", 8))%uint64(len(shapes))]
	}
	size := hashOf(mechanism)().Size()
	return Credential{
		Salt:       derive("salt", shape.saltBytes),
		Iterations: shape.iterations,
		StoredKey:  derive("stored", size),
		ServerKey:  derive("server", size),
	}, false
}
