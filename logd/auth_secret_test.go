package logd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/logd/auth"
	"github.com/brokerless/brokerless/logd/auth/authtest"
)

// decoyFirst is the salt and iteration count that s's authenticator
// shows a SCRAM-SHA-256 client naming user.
func decoyFirst(t *testing.T, s *Server, user string) string {
	t.Helper()
	session, err := s.auth.authn.Start(auth.ScramSHA256)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := session.Step([]byte("n,,n=" + user + ",r=abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	_, params, _ := strings.Cut(string(out), ",s=")
	return params
}

// TestDecoySecretKeptInDataDir: an unknown user name gets the same
// SCRAM salt after a restart, as a real user does, and the iteration
// count the users have (4096 here), not a default: the decoy secret is
// made once, mode 0600, in the data directory. A corrupt secret file
// stops the start, naming it.
func TestDecoySecretKeptInDataDir(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	path := filepath.Join(ts.dir, decoySecretFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %04o, want 0600", path, st.Mode().Perm())
	}
	mallory, alice := decoyFirst(t, ts.Server, "mallory"), decoyFirst(t, ts.Server, "alice")
	if !strings.HasSuffix(mallory, ",i=4096") {
		t.Fatalf("an unknown user's server-first: s=%s; want i=4096 as alice's (s=%s)", mallory, alice)
	}
	ts = ts.restart(t)
	if got := decoyFirst(t, ts.Server, "mallory"); got != mallory {
		t.Fatalf("an unknown user's salt changed across a restart: %s, then %s", mallory, got)
	}
	if got := decoyFirst(t, ts.Server, "alice"); got != alice {
		t.Fatalf("alice's salt changed across a restart: %s, then %s", alice, got)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ts.cfg); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a corrupt secret file: %v", err)
	}
}

// TestNoDecoySecretWithoutAuth: a server that requires no
// authentication makes no secret file.
func TestNoDecoySecretWithoutAuth(t *testing.T) {
	ts := startServer(t, t.TempDir())
	if _, err := os.Stat(filepath.Join(ts.dir, decoySecretFile)); !os.IsNotExist(err) {
		t.Fatalf("%s: %v, want none", decoySecretFile, err)
	}
}
