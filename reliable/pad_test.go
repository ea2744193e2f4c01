package reliable

import (
	"bytes"
	"errors"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestPadFull: with PadFull, every datagram closed full is exactly the
// MTU, with or without a key, and a receiver delivers every message
// from them; the one closed early to send what was there is not padded.
func TestPadFull(t *testing.T) {
	for _, key := range [][]byte{nil, bytes.Repeat([]byte{1}, 32)} {
		const mtu, n = 1408, 1000
		s, err := NewSender(SenderConfig{Session: 1, MTU: mtu, PadFull: true, Key: key}, simEpoch)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReceiver(ReceiverConfig{Feeds: []uint32{0}, Key: key, Rand: fixedRand(1)})
		if err != nil {
			t.Fatal(err)
		}
		var h countHandler
		buf := make([]byte, mtu)
		from := mustAddrPort("127.0.0.1:9")
		var sizes []int
		drain := func() {
			for {
				k, _, ok := s.NextOutgoing(simEpoch, buf)
				if !ok {
					return
				}
				if typ, _ := ParseHeader(buf[:k]); typ.Type == TypeData {
					sizes = append(sizes, k)
				}
				if err := r.HandleDatagram(simEpoch, from, buf[:k], &h); err != nil {
					t.Fatalf("datagram %d of %d bytes: %v", len(sizes), k, err)
				}
			}
		}
		for i := range n {
			m := transport.Message{Payload: bytes.Repeat([]byte{byte(i)}, 64)}
			if _, err := s.Publish(simEpoch, &m); err != nil {
				t.Fatal(err)
			}
			if i%100 == 99 {
				drain() // the last datagram of each hundred goes out early
			}
		}
		drain()
		if h.messages != n || h.gaps != 0 {
			t.Fatalf("key %v: %d messages, %d gaps, want %d and 0", key != nil, h.messages, h.gaps, n)
		}
		full, short := 0, 0
		for _, k := range sizes {
			if k == mtu {
				full++
			} else {
				short++
			}
		}
		if short != n/100 || full < 4*short {
			t.Fatalf("key %v: %d datagrams of the MTU, %d shorter (want %d, one per drain); sizes %v", key != nil, full, short, n/100, sizes)
		}
	}
}

// TestPaddingRefused: only zero bytes may follow the last frame, and
// only with the padded flag.
func TestPaddingRefused(t *testing.T) {
	s, _ := NewSender(SenderConfig{Session: 1, MTU: 512, PadFull: true}, simEpoch)
	for range 10 {
		m := transport.Message{Payload: make([]byte, 64)}
		if _, err := s.Publish(simEpoch, &m); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 512)
	k, _, _ := s.NextOutgoing(simEpoch, buf)
	good := bytes.Clone(buf[:k])
	if dh, _, err := ParseData(good, nil); err != nil || !dh.Padded || k != 512 {
		t.Fatalf("padded datagram of %d bytes: %+v %v", k, dh, err)
	}
	dirty := bytes.Clone(good)
	dirty[len(dirty)-1] = 1
	if _, _, err := ParseData(dirty, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("non-zero padding: %v", err)
	}
	unflagged := bytes.Clone(good)
	unflagged[headerLen] &^= dataFlagPadded
	if _, _, err := ParseData(unflagged, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("padding without the flag: %v", err)
	}
}
