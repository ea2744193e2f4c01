package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestLogdUserConcurrentChanges: 'logd user add' and 'logd user remove'
// runs on one file at the same time each keep the others' changes. Each
// run loads the file, changes it and writes it back; without the lock on
// FILE.lock, a run that loaded before another one's rename writes back a
// file without that one's user.
func TestLogdUserConcurrentChanges(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.json")
	const adds, removes = 16, 8
	for i := range removes {
		if code, _, errOut := runCLI(t, "", "logd", "user", "add", "--file", file, "--user", fmt.Sprintf("old%d", i), "--no-password"); code != exitOK {
			t.Fatalf("add old%d: exit %d\n%s", i, code, errOut)
		}
	}
	start := make(chan struct{})
	errs := make(chan string, adds+removes)
	var wg sync.WaitGroup
	run := func(args ...string) {
		defer wg.Done()
		<-start
		if code, _, errOut := runCLI(t, "", args...); code != exitOK {
			errs <- fmt.Sprintf("%v: exit %d\n%s", args, code, errOut)
		}
	}
	for i := range adds {
		wg.Add(1)
		go run("logd", "user", "add", "--file", file, "--user", fmt.Sprintf("new%d", i), "--no-password", "--allow", "consume:*")
	}
	for i := range removes {
		wg.Add(1)
		go run("logd", "user", "remove", "--file", file, "--user", fmt.Sprintf("old%d", i))
	}
	close(start)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	users, err := auth.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for i := range adds {
		if _, ok := users.Lookup(fmt.Sprintf("new%d", i)); !ok {
			lost = append(lost, fmt.Sprintf("new%d", i))
		}
	}
	for i := range removes {
		if _, ok := users.Lookup(fmt.Sprintf("old%d", i)); ok {
			lost = append(lost, fmt.Sprintf("removal of old%d", i))
		}
	}
	if len(lost) > 0 || users.Len() != adds {
		t.Fatalf("%d users, want %d; lost: %v", users.Len(), adds, lost)
	}
	for _, name := range []string{file, file + ".lock"} {
		if st, err := os.Stat(name); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want 0600", name, err, st.Mode().Perm())
		}
	}
}

// TestLogdUsersFileLockWaits: a change waits while another holds the
// lock, says so once, and is made when the lock is released; a waiting
// change ends, unmade, with its context.
func TestLogdUsersFileLockWaits(t *testing.T) {
	file := filepath.Join(realTempDir(t), "users.json")
	unlock, err := lockUsersFile(context.Background(), io.Discard, file)
	if err != nil {
		t.Fatal(err)
	}
	warn := &notifyWriter{wrote: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() {
		done <- updateUsersFile(context.Background(), warn, file, true, func(us *auth.Users) error {
			return us.Put(&auth.User{Name: "alice"})
		})
	}()
	select {
	case <-warn.wrote:
	case err := <-done:
		t.Fatalf("the change did not wait for the lock: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no note that the change waits for the lock")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the file was written while another held the lock: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = updateUsersFile(ctx, io.Discard, file, true, func(*auth.Users) error {
		t.Error("change called without the lock")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting with an ended context: %v", err)
	}

	unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the change did not take the released lock")
	}
	if users, err := auth.Load(file); err != nil || users.Len() != 1 {
		t.Fatalf("after the wait: %v, %v", users, err)
	}
	if !strings.Contains(warn.String(), "waiting for "+file+".lock") || strings.Count(warn.String(), "\n") != 1 {
		t.Fatalf("note: %q", warn.String())
	}
}

// notifyWriter collects what is written and signals each write.
type notifyWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
