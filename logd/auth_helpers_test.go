package logd

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brokerless/brokerless/logd/auth"
	"github.com/brokerless/brokerless/logd/auth/authtest"
)

// Passwords and grants of the test users.
const (
	alicePassword  = "alice-pw"
	readerPassword = "reader-pw"
	adminPassword  = "admin-pw"
)

// testUsers: alice produces and consumes orders.* in billing-* groups
// (SCRAM-SHA-256 and -512); reader only consumes orders.* (SHA-256, no
// group); admin may do anything (SHA-512); carol has no password, only
// her client certificate, and consumes orders.* in any group.
func testUsers(t testing.TB) *auth.Users {
	t.Helper()
	us := auth.NewUsers()
	add := func(name, password string, mechs []string, grants ...string) {
		u := &auth.User{Name: name}
		for i, m := range mechs {
			c, err := auth.NewCredential(m, password, []byte("salt-of-"+name+string(rune('0'+i))), auth.MinIterations)
			if err != nil {
				t.Fatal(err)
			}
			if u.SCRAM == nil {
				u.SCRAM = map[string]auth.Credential{}
			}
			u.SCRAM[m] = c
		}
		for _, g := range grants {
			gr, err := auth.ParseGrant(g)
			if err != nil {
				t.Fatal(err)
			}
			u.Grants = append(u.Grants, gr)
		}
		if err := us.Put(u); err != nil {
			t.Fatal(err)
		}
	}
	add("alice", alicePassword, auth.ScramMechanisms, "produce:orders.", "consume:orders.", "group:billing-")
	add("reader", readerPassword, []string{auth.ScramSHA256}, "consume:orders.")
	add("admin", adminPassword, []string{auth.ScramSHA512}, "admin:*", "produce:*", "consume:*", "group:*")
	add("carol", "", nil, "consume:orders.", "group:*")
	return us
}

// startAuthServer runs a Server requiring authentication of testUsers
// behind a TLS listener (verifying client certificates when
// verifyClients) until the test ends.
func startAuthServer(t testing.TB, p *authtest.PKI, verifyClients bool, mutate ...func(*Config)) *testServer {
	t.Helper()
	withUsers := func(c *Config) { c.Auth = auth.Config{Users: testUsers(t)} }
	tlsListener := func(ln net.Listener) net.Listener { return tls.NewListener(ln, p.ServerTLS(verifyClients)) }
	return serveTest(t, t.TempDir(), tlsListener, append([]func(*Config){withUsers}, mutate...)...)
}

// authClient is a franz-go client over TLS authenticating with m (none
// when nil).
func authClient(t testing.TB, ts *testServer, p *authtest.PKI, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgoTLS(p, nil)}, opts...)
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return newClient(t, ts.addr, opts...)
}

func kgoTLS(p *authtest.PKI, cert *tls.Certificate) kgo.Opt {
	return kgo.DialTLSConfig(p.ClientTLS(cert))
}

func scramSHA256(user, pass string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
}

func scramSHA512(user, pass string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
}

func plainMech(user, pass string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: pass}.AsMechanism()
}
