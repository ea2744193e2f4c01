package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brokerless/brokerless/logd/auth/authtest"
)

// TestLogdTLSAndUsers: logd with --tls-cert, --tls-key and --users
// serves a SCRAM client over TLS within its grants and refuses a wrong
// password.
func TestLogdTLSAndUsers(t *testing.T) {
	p := authtest.NewPKI(t)
	users := filepath.Join(t.TempDir(), "users.json")
	if code, _, errOut := runCLI(t, "pw-1\n", "logd", "user", "add", "--file", users, "--user", "alice", "--password-stdin",
		"--allow", "produce:orders.", "--allow", "consume:orders.", "--iterations", "4096"); code != exitOK {
		t.Fatal(errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, errOut, done := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auto-create",
		"--tls-cert", p.ServerCertFile, "--tls-key", p.ServerKeyFile, "--users", users)
	if !strings.Contains(errOut.String(), "authentication required") {
		t.Fatalf("no line saying authentication is required:\n%s", errOut)
	}
	client := func(pass string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(p.ClientTLS(nil)), kgo.AllowAutoTopicCreation(),
			kgo.SASL(scram.Auth{User: "alice", Pass: pass}.AsSha256Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if err := client("pw-1").ProduceSync(pctx, &kgo.Record{Topic: "orders.cli", Value: []byte("hi")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := client("pw-1").ProduceSync(pctx, &kgo.Record{Topic: "secret", Value: []byte("hi")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("producing outside the grants: %v", err)
	}
	if err := client("pw-2").Ping(pctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}
	stopLogd(t, cancel, done)
}

// TestLogdAuthFlagErrors: bad TLS and users flags exit 2 naming the
// flag, before logd listens.
func TestLogdAuthFlagErrors(t *testing.T) {
	p := authtest.NewPKI(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users.json")
	if code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", users, "--user", "carol", "--no-password"); code != exitOK {
		t.Fatal(errOut)
	}
	open := filepath.Join(dir, "open.json")
	b, _ := os.ReadFile(users)
	if err := os.WriteFile(open, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", p.ServerCertFile}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-client-ca", p.CAFile}, "--tls-client-ca needs --tls-cert"},
		{[]string{"--tls-cert", p.ServerCertFile, "--tls-key", p.CAFile}, "--tls-cert"},
		{[]string{"--tls-cert", p.ServerCertFile, "--tls-key", p.ServerKeyFile, "--tls-client-ca", p.ServerKeyFile}, "no PEM certificate"},
		{[]string{"--users", filepath.Join(dir, "missing.json")}, "--users"},
		{[]string{"--users", open}, "chmod 600"},
		{[]string{"--users", garbage}, "not a users file"},
		{[]string{"--users", users, "--sasl-mechanisms", "GSSAPI"}, `--sasl-mechanisms "GSSAPI"`},
		{[]string{"--sasl-mechanisms", "PLAIN"}, "--sasl-mechanisms needs --users"},
	}
	for _, tt := range tests {
		args := append([]string{"logd", "--dir", data, "--listen", "127.0.0.1:0", "--http", ""}, tt.args...)
		code, _, errOut := runCLI(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "listening") {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", tt.args, code, exitUsage, tt.want, errOut)
		}
	}
}
