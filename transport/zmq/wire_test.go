package zmq

import (
	"bytes"
	"errors"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []header{
		{kind: kindMessage, feed: 7, session: 0xdeadbeef01, seq: 42, time: -5, key: []byte("k"),
			headers: []transport.Header{{Key: "a", Value: []byte("1")}, {Key: "", Value: nil}}},
		{kind: kindMessage, feed: 1, session: 1, seq: 1, time: 1_700_000_000_123_456_789},
		{kind: kindPacked, feed: 1, session: 9, seq: 1 << 40, time: 3, count: 300},
		{kind: kindHeartbeat, feed: 2, session: 3, seq: 4, time: 5},
		{kind: kindEnd, feed: 2, session: 3, seq: 4, time: 5},
	} {
		b := appendHeader(nil, &h)
		if h.kind == kindMessage && len(b) != headerFixed+keyHeadersLen(h.key, h.headers) {
			t.Errorf("%s header is %d bytes, keyHeadersLen says %d", h.kind, len(b), headerFixed+keyHeadersLen(h.key, h.headers))
		}
		got, err := parseHeader(b, nil)
		if err != nil {
			t.Fatalf("%s: %v", h.kind, err)
		}
		if got.kind != h.kind || got.feed != h.feed || got.session != h.session || got.seq != h.seq || got.time != h.time || got.count != h.count || !bytes.Equal(got.key, h.key) || len(got.headers) != len(h.headers) {
			t.Errorf("%s: got %+v, want %+v", h.kind, got, h)
		}
		for i := range h.headers {
			if got.headers[i].Key != h.headers[i].Key || !bytes.Equal(got.headers[i].Value, h.headers[i].Value) {
				t.Errorf("%s: header %d is %+v, want %+v", h.kind, i, got.headers[i], h.headers[i])
			}
		}
	}
}

func TestHeaderRejects(t *testing.T) {
	good := appendHeader(nil, &header{kind: kindMessage, feed: 1, session: 2, seq: 3, key: []byte("key")})
	for name, b := range map[string][]byte{
		"short":           good[:headerFixed-1],
		"bad magic":       append([]byte{0xB7, 0x5B}, good[2:]...),
		"other version":   append([]byte{0xB7, 0x5A, 2}, good[3:]...),
		"unknown kind":    append([]byte{0xB7, 0x5A, 1, 9}, good[4:]...),
		"truncated key":   good[:len(good)-2],
		"trailing bytes":  append(append([]byte{}, good...), 0),
		"packed no count": appendHeader(nil, &header{kind: kindHeartbeat})[:headerFixed],
	} {
		if name == "packed no count" {
			b[3] = byte(kindPacked)
		}
		if _, err := parseHeader(b, nil); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: err %v, want ErrBadHeader", name, err)
		}
	}
	for _, k := range []kind{kindMessage, kindPacked, kindHeartbeat, kindEnd} {
		if _, err := parseHeader(appendHeader(nil, &header{kind: k, feed: 1, session: 2, seq: 0, count: 1}), nil); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s with seq 0: err %v, want ErrBadHeader", k, err)
		}
	}
	huge := appendHeader(nil, &header{kind: kindPacked, seq: 1<<64 - 2, count: 5})
	if _, err := parseHeader(huge, nil); !errors.Is(err, ErrBadHeader) {
		t.Errorf("seq overflow: err %v, want ErrBadHeader", err)
	}
}

func TestPackRoundTrip(t *testing.T) {
	msgs := []transport.Message{
		{Payload: []byte("a")},
		{Key: []byte("key"), Headers: []transport.Header{{Key: "h", Value: []byte("v")}}, Payload: bytes.Repeat([]byte("x"), 300)},
		{},
	}
	times := []int64{100, 90, 1 << 62}
	var body []byte
	for i := range msgs {
		before := len(body)
		body = appendPackEntry(body, &msgs[i], times[i], times[0])
		if n := len(body) - before; n > packEntryLen(&msgs[i]) {
			t.Errorf("entry %d: %d bytes, packEntryLen says at most %d", i, n, packEntryLen(&msgs[i]))
		}
	}
	if err := checkPack(body, uint64(len(msgs))); err != nil {
		t.Fatal(err)
	}
	r := packReader{body: body, base: times[0], left: uint64(len(msgs))}
	for i, m := range msgs {
		e, err := r.next(nil)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if e.time != times[i] || !bytes.Equal(e.key, m.Key) || !bytes.Equal(e.payload, m.Payload) || len(e.headers) != len(m.Headers) {
			t.Errorf("entry %d: got %+v, want %+v at %d", i, e, m, times[i])
		}
	}
	for name, tc := range map[string]struct {
		body  []byte
		count uint64
	}{
		"count too high": {body, 4},
		"count too low":  {body, 2},
		"truncated":      {body[:len(body)-1], 3},
		"absurd count":   {body, 1 << 40},
	} {
		if err := checkPack(tc.body, tc.count); !errors.Is(err, ErrBadPack) {
			t.Errorf("%s: err %v, want ErrBadPack", name, err)
		}
	}
}

func FuzzHeader(f *testing.F) {
	f.Add(appendHeader(nil, &header{kind: kindMessage, feed: 1, session: 2, seq: 3, key: []byte("k"), headers: []transport.Header{{Key: "a", Value: []byte("b")}}}))
	f.Add(appendHeader(nil, &header{kind: kindPacked, seq: 1, count: 3}))
	f.Add(appendHeader(nil, &header{kind: kindEnd, seq: 1}))
	f.Add(appendHeader(nil, &header{kind: kindHeartbeat, seq: 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b, nil)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("error %v does not wrap ErrBadHeader", err)
			}
			return
		}
		// Sequence numbers start at 1 and a pack's last one fits:
		// seq-1 and seq+count-1 never wrap in the tracker.
		if h.seq == 0 || h.kind == kindPacked && (h.count == 0 || h.seq+(h.count-1) < h.seq) {
			t.Fatalf("accepted %s header seq %d count %d", h.kind, h.seq, h.count)
		}
		// What decodes encodes back to the same bytes.
		if again := appendHeader(nil, &h); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %x, decoded from %x", again, b)
		}
	})
}

func FuzzPack(f *testing.F) {
	m := transport.Message{Key: []byte("k"), Headers: []transport.Header{{Key: "a", Value: []byte("b")}}, Payload: []byte("payload")}
	one := appendPackEntry(nil, &m, 5, 0)
	f.Add(one, uint64(1))
	f.Add(appendPackEntry(one, &transport.Message{}, -3, 0), uint64(2))
	f.Fuzz(func(t *testing.T, body []byte, count uint64) {
		err := checkPack(body, count)
		if err != nil {
			if !errors.Is(err, ErrBadPack) {
				t.Fatalf("error %v does not wrap ErrBadPack", err)
			}
			return
		}
		// A pack that checks holds at least 4 bytes per message, so a
		// header cannot claim more than its frame holds.
		if count > uint64(len(body))/4 {
			t.Fatalf("%d messages checked in %d bytes", count, len(body))
		}
		// A body that checks reads back entry by entry and re-encodes
		// to the same bytes.
		r := packReader{body: body, left: count}
		var again []byte
		for r.left > 0 {
			e, err := r.next(nil)
			if err != nil {
				t.Fatalf("checked pack fails at entry %d: %v", count-r.left, err)
			}
			again = appendPackEntry(again, &transport.Message{Key: e.key, Headers: e.headers, Payload: e.payload}, e.time, 0)
		}
		if !bytes.Equal(again, body) {
			t.Fatalf("re-encoded %x, decoded from %x", again, body)
		}
	})
}
