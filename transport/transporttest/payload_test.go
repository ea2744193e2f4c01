package transporttest_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/brokerless/brokerless/transport/transporttest"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, c := range []struct{ index, size, want int }{
		{0, 0, 12},
		{1, 12, 12},
		{2, 13, 13},
		{7, 20, 20},
		{1999, 211, 211},
		{123456, 1 << 20, 1 << 20},
	} {
		p := transporttest.Payload(c.index, c.size)
		if len(p) != c.want {
			t.Errorf("Payload(%d, %d) has %d bytes, want %d", c.index, c.size, len(p), c.want)
		}
		got, err := transporttest.PayloadIndex(p)
		if err != nil || got != c.index {
			t.Errorf("PayloadIndex(Payload(%d, %d)) = %d, %v", c.index, c.size, got, err)
		}
	}
	if bytes.Equal(transporttest.Payload(1, 64)[12:], transporttest.Payload(2, 64)[12:]) {
		t.Error("payloads of different indexes share their filler")
	}
}

func TestPayloadIndexRejects(t *testing.T) {
	good := transporttest.Payload(42, 100)
	for _, c := range []struct {
		name string
		p    []byte
	}{
		{"nil", nil},
		{"short", good[:11]},
		{"truncated", good[:99]},
		{"padded", append(bytes.Clone(good), 0)},
		{"index changed", flip(good, 7)},
		{"length changed", flip(good, 11)},
		{"filler changed", flip(good, 12)},
		{"last byte changed", flip(good, 99)},
		{"index out of range", bytes.Repeat([]byte{0xff}, 12)},
	} {
		if idx, err := transporttest.PayloadIndex(c.p); !errors.Is(err, transporttest.ErrBadPayload) {
			t.Errorf("%s: PayloadIndex = %d, %v; want ErrBadPayload", c.name, idx, err)
		}
	}
}

// flip returns a copy of p with byte i changed.
func flip(p []byte, i int) []byte {
	q := bytes.Clone(p)
	q[i] ^= 0x40
	return q
}

func FuzzPayloadIndex(f *testing.F) {
	f.Add(transporttest.Payload(0, 12))
	f.Add(transporttest.Payload(5, 40))
	f.Add([]byte("not a payload at all"))
	f.Fuzz(func(t *testing.T, p []byte) {
		idx, err := transporttest.PayloadIndex(p)
		if err != nil {
			if !errors.Is(err, transporttest.ErrBadPayload) {
				t.Fatalf("error %v does not wrap ErrBadPayload", err)
			}
			return
		}
		if want := transporttest.Payload(idx, len(p)); !bytes.Equal(p, want) {
			t.Fatalf("accepted %x as index %d, which is %x", p, idx, want)
		}
	})
}
