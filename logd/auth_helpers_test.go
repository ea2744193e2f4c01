package logd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brokerless/brokerless/logd/auth"
	"github.com/brokerless/brokerless/logd/storage"
)

// testPKI is a throwaway certificate authority made for one test, with
// a server certificate for 127.0.0.1, written as PEM files (for kcat)
// in a temporary directory. No key outlives the test.
type testPKI struct {
	dir     string
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey
	caFile  string
	pool    *x509.CertPool
	server  tls.Certificate
	serials int64
}

func newPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), serials: 1}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "logd test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.caFile = filepath.Join(p.dir, "ca.pem")
	writePEM(t, p.caFile, "CERTIFICATE", der)
	p.server, _, _ = p.issue(t, "127.0.0.1", true)
	return p
}

// issue makes a certificate signed by the CA: for a server (127.0.0.1
// and localhost) or a client whose subject common name is cn. It
// returns it with the paths of its PEM certificate and key.
func (p *testPKI) issue(t testing.TB, cn string, server bool) (tls.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serials++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serials),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(p.dir, cn+".pem")
	keyFile := filepath.Join(p.dir, cn+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return cert, certFile, keyFile
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serverTLS is the listener's TLS config; with verifyClients it
// requires client certificates signed by the CA.
func (p *testPKI) serverTLS(verifyClients bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if verifyClients {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	return c
}

// clientTLS trusts the CA and presents cert when given.
func (p *testPKI) clientTLS(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

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
func startAuthServer(t testing.TB, p *testPKI, verifyClients bool, mutate ...func(*Config)) *testServer {
	t.Helper()
	cfg := Config{Storage: storage.Config{Dir: t.TempDir()}, AutoCreateTopics: true, Auth: auth.Config{Users: testUsers(t)}}
	for _, f := range mutate {
		f(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(tls.NewListener(ln, p.serverTLS(verifyClients)))
	t.Cleanup(func() { srv.Close() })
	return &testServer{Server: srv, addr: ln.Addr().String(), dir: cfg.Storage.Dir, cfg: cfg}
}

// authClient is a franz-go client over TLS authenticating with m (none
// when nil).
func authClient(t testing.TB, ts *testServer, p *testPKI, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.DialTLSConfig(p.clientTLS(nil))}, opts...)
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return newClient(t, ts.addr, opts...)
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
