package auth

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileRoundTrip: Encode then Decode gives the same users, and the
// file holds no password.
func TestFileRoundTrip(t *testing.T) {
	us := testUsers(t)
	b := Encode(us)
	if bytes.Contains(b, []byte("secret")) {
		t.Fatalf("the users file holds a password:\n%s", b)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Encode(got), b) {
		t.Fatalf("decode then encode changed the file:\n%s\nvs\n%s", Encode(got), b)
	}
	alice, ok := got.Lookup("alice")
	if !ok || len(alice.SCRAM) != 2 || len(alice.Grants) != 1 || alice.Grants[0] != (Grant{Produce, "orders."}) {
		t.Fatalf("alice after the round trip: %+v", alice)
	}
	a := newAuth(t, got)
	if u, err := converse(t, a, scramAuth(ScramSHA512, "alice", "alice-secret")); err != nil || u.Name != "alice" {
		t.Fatalf("alice from the decoded file: %v %v", u, err)
	}
}

// validFile is a one-user file with a SHA-256 credential; keys are
// 32 bytes.
const validFile = `{"format": "brokerless-logd-users/1", "users": [
 {"name": "alice",
  "scram": {"SCRAM-SHA-256": {"salt": "c2FsdHNhbHQ=", "iterations": 4096,
    "stored_key": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    "server_key": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}},
  "allow": ["produce:orders.", "group:*"]}]}`

func TestDecodeRefuses(t *testing.T) {
	if _, err := Decode([]byte(validFile)); err != nil {
		t.Fatalf("the valid file: %v", err)
	}
	cases := []struct{ name, from, to, want string }{
		{"format", "brokerless-logd-users/1", "brokerless-logd-users/2", "format"},
		{"unknown field", `"allow"`, `"deny"`, "unknown field"},
		{"empty name", `"name": "alice"`, `"name": ""`, "empty user name"},
		{"control character", `"name": "alice"`, `"name": "al\nice"`, "control character"},
		{"mechanism", "SCRAM-SHA-256", "SCRAM-SHA-1", "unknown SCRAM mechanism"},
		{"few iterations", `4096`, `4095`, "iterations"},
		{"many iterations", `4096`, `16385`, "iterations"},
		{"short salt", `"c2FsdHNhbHQ="`, `"c2FsdA=="`, "salt"},
		{"key length", `"stored_key": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="`, `"stored_key": "AAAA"`, "stored_key"},
		{"base64", `"c2FsdHNhbHQ="`, `"c2FsdHNhbHQ"`, "not a users file"},
		{"grant", `"group:*"`, `"group:"`, "empty prefix"},
		{"operation", `"group:*"`, `"write:*"`, "unknown operation"},
		{"trailing data", `"group:*"]}]}`, `"group:*"]}]} {}`, "after the JSON"},
		{"duplicate", `"group:*"]}]}`, `"group:*"]}, {"name": "alice", "allow": []}]}`, "listed twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(validFile, c.from) {
				t.Fatalf("%q not in the valid file", c.from)
			}
			_, err := Decode([]byte(strings.Replace(validFile, c.from, c.to, 1)))
			if !errors.Is(err, ErrBadUsersFile) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrBadUsersFile saying %q", err, c.want)
			}
		})
	}
}

// TestLoadModes: Load refuses a file others may read or write, or its
// group may write; Save writes 0600.
func TestLoadModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.json")
	if err := Save(path, testUsers(t)); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("Save wrote mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o640, true}, {0o644, false}, {0o660, false}, {0o602, false}, {0o604, false}} {
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		us, err := Load(path)
		switch {
		case c.ok && (err != nil || us.Len() != 3):
			t.Errorf("mode %04o: %v", c.mode, err)
		case !c.ok && !errors.Is(err, ErrBadUsersFile):
			t.Errorf("mode %04o loaded (%v), want refused", c.mode, err)
		}
	}
	if _, err := Load(filepath.Dir(path)); !errors.Is(err, ErrBadUsersFile) {
		t.Errorf("a directory: %v", err)
	}
}

// FuzzDecode: any bytes either decode into users that encode and
// decode back to the same file, or are refused with ErrBadUsersFile;
// never a panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(validFile))
	f.Add(Encode(testUsers(f)))
	f.Add([]byte(`{"format":"brokerless-logd-users/1","users":[{"name":"x","allow":["admin:*"]}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		us, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrBadUsersFile) {
				t.Fatalf("error %v is not ErrBadUsersFile", err)
			}
			return
		}
		enc := Encode(us)
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decoding our own encoding: %v\n%s", err, enc)
		}
		if !bytes.Equal(Encode(again), enc) {
			t.Fatalf("encoding is not stable:\n%s\nvs\n%s", Encode(again), enc)
		}
	})
}
