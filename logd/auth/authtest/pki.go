package authtest

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
)

// PKI is a throwaway certificate authority made for one test, with
// a server certificate for 127.0.0.1, written as PEM files (for kcat)
// in a temporary directory. No key outlives the test.
type PKI struct {
	Dir    string // where the PEM files are
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	CAFile string // the CA certificate, PEM
	Pool   *x509.CertPool
	Server tls.Certificate // for 127.0.0.1 and localhost
	// ServerCertFile and ServerKeyFile hold Server as PEM.
	ServerCertFile, ServerKeyFile string
	serials                       int64
}

// NewPKI makes a CA and a server certificate in a temporary directory
// of t.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{Dir: t.TempDir(), serials: 1}
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
	p.Pool = x509.NewCertPool()
	p.Pool.AddCert(p.ca)
	p.CAFile = filepath.Join(p.Dir, "ca.pem")
	writePEM(t, p.CAFile, "CERTIFICATE", der)
	p.Server, p.ServerCertFile, p.ServerKeyFile = p.Issue(t, "127.0.0.1", true)
	return p
}

// Issue makes a certificate signed by the CA: for a server (127.0.0.1
// and localhost) or a client whose subject common name is cn. It
// returns it with the paths of its PEM certificate and key.
func (p *PKI) Issue(t testing.TB, cn string, server bool) (tls.Certificate, string, string) {
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
	certFile := filepath.Join(p.Dir, cn+".pem")
	keyFile := filepath.Join(p.Dir, cn+".key")
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

// ServerTLS is the listener's TLS config; with verifyClients it
// requires client certificates signed by the CA.
func (p *PKI) ServerTLS(verifyClients bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{p.Server}, MinVersion: tls.VersionTLS12}
	if verifyClients {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.Pool
	}
	return c
}

// ClientTLS trusts the CA and presents cert when given.
func (p *PKI) ClientTLS(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}
