package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/logd/auth"
)

// TestLogdUserAdd: add writes a 0600 users file holding SCRAM
// credentials (never the password) and the grants; a second add of the
// same user needs --replace; list shows the users without secrets;
// remove takes one out.
func TestLogdUserAdd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.json")
	code, out, errOut := runCLI(t, "s3cret-pw\n", "logd", "user", "add", "--file", file, "--user", "alice", "--password-stdin",
		"--allow", "produce:orders.", "--allow", "consume:orders.", "--iterations", "4096")
	if code != exitOK || !strings.Contains(out, `user "alice"`) {
		t.Fatalf("add: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Fatalf("the users file holds the password:\n%s", b)
	}
	st, _ := os.Stat(file)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	users, err := auth.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	alice, ok := users.Lookup("alice")
	if !ok || len(alice.SCRAM) != 2 || alice.SCRAM[auth.ScramSHA256].Iterations != 4096 || len(alice.Grants) != 2 {
		t.Fatalf("alice: %+v", alice)
	}
	// The stored credential checks the password.
	a, err := auth.New(auth.Config{Users: users})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := a.Start(auth.Plain)
	if _, _, err := s.Step([]byte("\x00alice\x00s3cret-pw")); err != nil {
		t.Fatalf("PLAIN with the password given to add: %v", err)
	}

	if code, _, errOut := runCLI(t, "other\n", "logd", "user", "add", "--file", file, "--user", "alice", "--password-stdin"); code != exitFailure || !strings.Contains(errOut, "--replace") {
		t.Fatalf("second add: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", file, "--user", "carol", "--no-password", "--allow", "consume:*"); code != exitOK {
		t.Fatalf("certificate user: exit %d\n%s", code, errOut)
	}
	code, out, _ = runCLI(t, "", "logd", "user", "list", "--file", file)
	if code != exitOK || !strings.Contains(out, "alice  SCRAM-SHA-256,SCRAM-SHA-512,PLAIN  produce:orders. consume:orders.") ||
		!strings.Contains(out, "carol  client certificate") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "", "logd", "user", "remove", "--file", file, "--user", "carol"); code != exitOK {
		t.Fatal("remove")
	}
	if users, _ := auth.Load(file); users.Len() != 1 {
		t.Fatalf("%d users after remove", users.Len())
	}
	if code, _, _ := runCLI(t, "", "logd", "user", "remove", "--file", file, "--user", "carol"); code != exitFailure {
		t.Fatal("removing a missing user succeeded")
	}
}

func TestLogdUserFlagErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.json")
	tests := []struct {
		stdin string
		args  []string
		want  string
	}{
		{"pw\n", []string{"--user", "a", "--password-stdin"}, "--file is required"},
		{"pw\n", []string{"--file", file, "--password-stdin"}, "--user is required"},
		{"pw\n", []string{"--file", file, "--user", "a"}, "--password-stdin"},
		{"pw\n", []string{"--file", file, "--user", "a", "--password-stdin", "--no-password"}, "--password-stdin"},
		{"", []string{"--file", file, "--user", "a", "--password-stdin"}, "no password on standard input"},
		{"\n", []string{"--file", file, "--user", "a", "--password-stdin"}, "the password is empty"},
		{"pw\n", []string{"--file", file, "--user", "a", "--password-stdin", "--allow", "write:x"}, `unknown operation "write"`},
		{"pw\n", []string{"--file", file, "--user", "a", "--password-stdin", "--allow", "produce:"}, "empty prefix"},
		{"pw\n", []string{"--file", file, "--user", "a", "--password-stdin", "--mechanism", "SCRAM-SHA-1"}, `--mechanism "SCRAM-SHA-1"`},
		{"pw\n", []string{"--file", file, "--user", "a", "--password-stdin", "--iterations", "100"}, "--iterations 100"},
		{"pw\n", []string{"--file", file, "--user", "a\nb", "--password-stdin"}, "control character"},
		{"", []string{"--file", file, "--user", "a", "--no-password", "--mechanism", "SCRAM-SHA-512"}, "--mechanism needs a password"},
	}
	for _, tt := range tests {
		args := append([]string{"logd", "user", "add"}, tt.args...)
		code, _, errOut := runCLI(t, tt.stdin, args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", tt.args, code, exitUsage, tt.want, errOut)
		}
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatal("a refused add wrote the file")
	}
}

// TestLogdUserGroup: "logd user" is a command group, not logd with an
// argument: it lists its subcommands.
func TestLogdUserGroup(t *testing.T) {
	code, _, errOut := runCLI(t, "", "logd", "user")
	if code != exitUsage || !strings.Contains(errOut, "brokerless logd user: missing subcommand") || !strings.Contains(errOut, "logd user add") {
		t.Errorf("logd user: exit %d\n%s", code, errOut)
	}
	code, out, _ := runCLI(t, "", "logd", "user", "--help")
	if code != exitOK || !strings.Contains(out, "logd user remove") {
		t.Errorf("logd user --help: exit %d\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "", "logd", "user", "frob")
	if code != exitUsage || !strings.Contains(errOut, `unknown subcommand "frob"`) {
		t.Errorf("logd user frob: exit %d\n%s", code, errOut)
	}
}
