package logd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/logd/auth/authtest"
)

// saslSSL is kcat's configuration for SASL_SSL with a mechanism, user
// and password, trusting the test CA.
func saslSSL(p *authtest.PKI, mechanism, user, password string) []string {
	return []string{"-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + p.CAFile,
		"-X", "sasl.mechanisms=" + mechanism, "-X", "sasl.username=" + user, "-X", "sasl.password=" + password}
}

// TestKcatSASLSSL: kcat (librdkafka) produces and consumes over TLS
// after SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN, including a consumer
// group (-G) within the user's group grant.
func TestKcatSASLSSL(t *testing.T) {
	kcatPath(t)
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false, func(c *Config) { c.MinSessionTimeout = time.Second })
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		t.Run(mech, func(t *testing.T) {
			topic := "orders." + strings.ToLower(mech)
			sasl := saslSSL(p, mech, "alice", alicePassword)
			var in strings.Builder
			for i := 0; i < 100; i++ {
				fmt.Fprintf(&in, "k%d:value %d\n", i%10, i)
			}
			kcat(t, in.String(), append([]string{"-b", ts.addr, "-t", topic, "-P", "-K:", "-X", "acks=all"}, sasl...)...)
			out := kcat(t, "", append([]string{"-b", ts.addr, "-t", topic, "-C", "-o", "beginning", "-e", "-f", "%k=%s\n"}, sasl...)...)
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 100 || lines[99] != "k9=value 99" {
				t.Fatalf("consumed %d lines:\n%.300s", len(lines), out)
			}
			out = kcat(t, "", append([]string{"-b", ts.addr, "-G", "billing-" + mech, topic, "-e", "-X", "auto.offset.reset=earliest", "-f", "%s\n"}, sasl...)...)
			if n := len(strings.Fields(out)) / 2; n != 100 {
				t.Fatalf("group consumed %d records", n)
			}
		})
	}
}

// TestKcatRefused: kcat reports a wrong password as an authentication
// failure, and producing to or consuming from a topic outside the
// user's grants as "Topic authorization failed".
func TestKcatRefused(t *testing.T) {
	kcatPath(t)
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	admin := authClient(t, ts, p, scramSHA512("admin", adminPassword))
	createTopic(t, admin, "audit", 1)
	produceN(t, admin, "audit", "secret", 3)

	_, errOut, err := kcatTry(t, "", append([]string{"-b", ts.addr, "-L", "-m", "5"}, saslSSL(p, "SCRAM-SHA-256", "alice", "wrong")...)...)
	if err == nil || !strings.Contains(errOut, "SASL authentication error: Authentication failed: invalid credentials") {
		t.Fatalf("wrong password: %v\n%s", err, errOut)
	}
	sasl := saslSSL(p, "SCRAM-SHA-256", "alice", alicePassword)
	_, errOut, err = kcatTry(t, "x\n", append([]string{"-b", ts.addr, "-t", "audit", "-P", "-X", "message.timeout.ms=10000"}, sasl...)...)
	if err == nil || !strings.Contains(errOut, "Topic authorization failed") {
		t.Fatalf("producing to audit: %v\n%s", err, errOut)
	}
	out, errOut, err := kcatTry(t, "", append([]string{"-b", ts.addr, "-t", "audit", "-C", "-o", "beginning", "-e"}, sasl...)...)
	if err == nil || strings.Contains(out, "secret") || !strings.Contains(errOut, "Topic authorization failed") {
		t.Fatalf("consuming audit: %v\nstdout %q\n%s", err, out, errOut)
	}
}

// TestKcatClientCertificate: kcat over TLS with a client certificate
// whose CN is a user, without SASL, consumes within that user's grants.
func TestKcatClientCertificate(t *testing.T) {
	kcatPath(t)
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, true)
	adminCert, _, _ := p.Issue(t, "admin-cert", false)
	admin := newClient(t, ts.addr, kgoTLS(p, &adminCert), kgo.SASL(scramSHA512("admin", adminPassword)))
	createTopic(t, admin, "orders.eu", 1)
	produceN(t, admin, "orders.eu", "r", 5)
	_, certFile, keyFile := p.Issue(t, "carol", false)
	out := kcat(t, "", "-b", ts.addr, "-t", "orders.eu", "-C", "-o", "beginning", "-e", "-f", "%s\n",
		"-X", "security.protocol=SSL", "-X", "ssl.ca.location="+p.CAFile,
		"-X", "ssl.certificate.location="+certFile, "-X", "ssl.key.location="+keyFile)
	if got := strings.Fields(out); len(got) != 5 || got[4] != "r-4" {
		t.Fatalf("carol consumed %q", out)
	}
}
