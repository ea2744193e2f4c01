package auth

import (
	"bytes"
	"strings"
	"testing"
)

func TestParsePlain(t *testing.T) {
	long := strings.Repeat("x", 256)
	cases := []struct {
		in   string
		want PlainMessage
		ok   bool
	}{
		{"\x00alice\x00pw", PlainMessage{"", "alice", "pw"}, true},
		{"alice\x00alice\x00pw", PlainMessage{"alice", "alice", "pw"}, true},
		{"\x00alice\x00p\xc3\xa4ss", PlainMessage{"", "alice", "päss"}, true},
		{"", PlainMessage{}, false},
		{"\x00alice", PlainMessage{}, false},
		{"\x00alice\x00", PlainMessage{}, false},
		{"\x00\x00pw", PlainMessage{}, false},
		{"\x00alice\x00pw\x00", PlainMessage{}, false},
		{"\x00alice\x00\xff", PlainMessage{}, false},
		{"\x00" + long + "\x00pw", PlainMessage{}, false},
		{"\x00alice\x00" + long, PlainMessage{}, false},
	}
	for _, c := range cases {
		got, err := ParsePlain([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParsePlain(%.30q) = %+v, %v", c.in, got, err)
		}
	}
}

// FuzzParsePlain: a message either parses into fields that rebuild it
// exactly, each within RFC 4616's limits, or is refused; never a panic.
func FuzzParsePlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00pw"))
	f.Add([]byte("z\x00u\x00p"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParsePlain(b)
		if err != nil {
			return
		}
		if m.User == "" || m.Password == "" {
			t.Fatalf("accepted an empty user or password: %+v", m)
		}
		for _, s := range []string{m.AuthzID, m.User, m.Password} {
			if len(s) > maxPlainField || strings.ContainsRune(s, 0) {
				t.Fatalf("accepted field %q", s)
			}
		}
		if rebuilt := []byte(m.AuthzID + "\x00" + m.User + "\x00" + m.Password); !bytes.Equal(rebuilt, b) {
			t.Fatalf("fields %+v do not rebuild %q", m, b)
		}
	})
}
