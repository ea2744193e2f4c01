package statsd

import (
	"errors"
	"strings"
	"testing"
)

func TestSeqLineRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		id  string
		seq uint64
	}{
		{"a", 0},
		{"host-1.web_7f3a", 1},
		{strings.Repeat("x", MaxClientIDLen), 1<<64 - 1},
	} {
		line := AppendSeqLine(nil, tc.id, tc.seq)
		if len(line) > MaxSeqLineLen {
			t.Errorf("%q: %d bytes > MaxSeqLineLen %d", line, len(line), MaxSeqLineLen)
		}
		id, seq, ok := ParseSeqLine(line)
		if !ok || string(id) != tc.id || seq != tc.seq {
			t.Errorf("ParseSeqLine(%q) = %q, %d, %v", line, id, seq, ok)
		}
		if !IsSeqLine(line) {
			t.Errorf("IsSeqLine(%q) = false", line)
		}
	}
	if got := string(AppendSeqLine([]byte("x\n"), "c1", 42)); got != "x\n_bl.seq:c1/42|seq" {
		t.Errorf("AppendSeqLine = %q", got)
	}
}

func TestParseSeqLineRejects(t *testing.T) {
	for _, line := range []string{
		"",
		"_bl.seq:",
		"_bl.seq:c1/42",
		"_bl.seq:c1/42|c",
		"_bl.seq:/42|seq",
		"_bl.seq:c1/|seq",
		"_bl.seq:c1/4x|seq",
		"_bl.seq:c1/-4|seq",
		"_bl.seq:c1/042|seq",
		"_bl.seq:c:1/4|seq",
		"_bl.seq:c1/18446744073709551616|seq",
		"_bl.seq:c1/123456789012345678901|seq",
		"_bl.seq:" + strings.Repeat("x", MaxClientIDLen+1) + "/1|seq",
		"bl.seq:c1/42|seq",
	} {
		if _, _, ok := ParseSeqLine([]byte(line)); ok {
			t.Errorf("ParseSeqLine(%q) accepted", line)
		}
	}
}

func TestCheckClientID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"web-1.example_2", true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"a/b", false},
		{"a:b", false},
		{"a b", false},
	} {
		err := CheckClientID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("CheckClientID(%q) = %v", tc.id, err)
		}
		if err != nil && !errors.Is(err, ErrBadClientID) {
			t.Errorf("CheckClientID(%q) = %v, not ErrBadClientID", tc.id, err)
		}
	}
}

func TestAppendSeqLineAllocs(t *testing.T) {
	buf := make([]byte, 0, MaxSeqLineLen)
	if n := testing.AllocsPerRun(100, func() { buf = AppendSeqLine(buf[:0], "client-1", 123456) }); n != 0 {
		t.Errorf("AppendSeqLine: %v allocs", n)
	}
}

func FuzzParseSeqLine(f *testing.F) {
	f.Add([]byte("_bl.seq:c1/42|seq"))
	f.Add([]byte("_bl.seq:c1/|seq"))
	f.Fuzz(func(t *testing.T, line []byte) {
		id, seq, ok := ParseSeqLine(line)
		if !ok {
			return
		}
		if err := CheckClientID(string(id)); err != nil {
			t.Fatalf("accepted %q with client id %v", line, err)
		}
		if again := AppendSeqLine(nil, string(id), seq); string(again) != string(line) {
			t.Fatalf("%q parsed to %q/%d, formats as %q", line, id, seq, again)
		}
	})
}
