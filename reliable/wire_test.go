package reliable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

var testID = transport.StreamID{Feed: 5, Session: 0xfeedface}

func TestFrameRoundTrip(t *testing.T) {
	msgs := []transport.Message{
		{Payload: []byte("plain")},
		{Topic: "AAPL", Payload: []byte{1, 2, 3}},
		{Key: []byte("k"), Headers: []transport.Header{{Key: "a", Value: []byte("1")}, {Key: "bb", Value: nil}}, Payload: nil},
		{Topic: "t", Key: bytes.Repeat([]byte{9}, 300), Payload: bytes.Repeat([]byte{7}, 500)},
	}
	base := int64(1_700_000_000_000_000_000)
	b := appendDataHead(nil, testID, 10, 3, base)
	for i := range msgs {
		msgs[i].Time = time.Unix(0, base+int64(i)*1000-500)
		b = appendFrame(b, frameBegin|frameEnd, &msgs[i], msgs[i].Time.UnixNano()-base, 0, msgs[i].Payload)
	}
	putDataCount(b, len(msgs))
	h, err := ParseHeader(b)
	if err != nil || h.Type != TypeData || h.Stream != testID {
		t.Fatalf("header %+v %v", h, err)
	}
	dh, frames, err := ParseData(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dh.FirstSeq != 10 || dh.Low != 3 || dh.Count != len(msgs) || dh.Repair {
		t.Fatalf("head %+v", dh)
	}
	for i, f := range frames {
		m := msgs[i]
		if !f.Begin() || !f.End() || f.Time != m.Time.UnixNano() || string(f.Topic) != m.Topic ||
			!bytes.Equal(f.Key, m.Key) || !bytes.Equal(f.Chunk, m.Payload) || f.NumHeaders != len(m.Headers) {
			t.Fatalf("frame %d: %+v", i, f)
		}
		hr := f.Headers()
		for _, want := range m.Headers {
			k, v, ok := hr.Next()
			if !ok || string(k) != want.Key || !bytes.Equal(v, want.Value) {
				t.Fatalf("frame %d header %q=%q", i, k, v)
			}
		}
	}
}

func TestControlRoundTrip(t *testing.T) {
	b := AppendBeat(nil, TypeHeartbeat, testID, Beat{Next: 100, Low: 40})
	beat, err := ParseBeat(b)
	if err != nil || beat != (Beat{Next: 100, Low: 40}) {
		t.Fatal(beat, err)
	}
	rs := []Range{{1, 1}, {5, 9}, {100, 1 << 40}}
	rr, err := ParseRanges(AppendRanges(nil, TypeNack, testID, rs))
	if err != nil || rr.Len() != 3 {
		t.Fatal(err)
	}
	for i, r := range rs {
		if rr.At(i) != r {
			t.Fatalf("range %d: %v", i, rr.At(i))
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good := AppendBeat(nil, TypeHeartbeat, testID, Beat{Next: 2, Low: 1})
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		b    []byte
		kind error
	}{
		{"empty", nil, ErrForeign},
		{"magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), ErrForeign},
		{"version", mut(func(b []byte) []byte { b[2] = 9; return b }), ErrForeign},
		{"type", mut(func(b []byte) []byte { b[3] = 99; return b }), ErrMalformed},
		{"session", mut(func(b []byte) []byte { clear(b[8:16]); return b }), ErrMalformed},
		{"short", good[:10], ErrMalformed},
	}
	for _, c := range cases {
		_, err := ParseHeader(c.b)
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	if _, err := ParseBeat(mut(func(b []byte) []byte { b[len(b)-1] = 9; return b })); !errors.Is(err, ErrMalformed) {
		t.Errorf("low > next: %v", err)
	}
	bad := AppendRanges(nil, TypeNack, testID, []Range{{5, 9}, {7, 8}})
	if _, err := ParseRanges(bad); !errors.Is(err, ErrMalformed) {
		t.Errorf("overlapping ranges: %v", err)
	}
}

// seedDatagrams returns valid datagrams of every type for fuzz corpora.
func seedDatagrams() [][]byte {
	s, _ := NewSender(SenderConfig{Session: 1, MTU: 512}, simEpoch)
	var out [][]byte
	for i, size := range []int{0, 10, 700} {
		m := transport.Message{Topic: "x", Key: []byte{byte(i)}, Headers: []transport.Header{{Key: "h", Value: []byte("v")}}, Payload: make([]byte, size)}
		_, _ = s.Publish(simEpoch, &m)
	}
	buf := make([]byte, 512)
	for {
		n, _, ok := s.NextOutgoing(simEpoch, buf)
		if !ok {
			break
		}
		out = append(out, bytes.Clone(buf[:n]))
	}
	// A padded datagram (SenderConfig.PadFull).
	ps, _ := NewSender(SenderConfig{Session: 2, MTU: 512, PadFull: true}, simEpoch)
	for range 8 {
		_, _ = ps.Publish(simEpoch, &transport.Message{Payload: make([]byte, 64)})
	}
	if n, _, ok := ps.NextOutgoing(simEpoch, buf); ok {
		out = append(out, bytes.Clone(buf[:n]))
	}
	id := s.Stream()
	out = append(out,
		AppendBeat(nil, TypeEnd, id, Beat{Next: 9, Low: 2}),
		AppendRanges(nil, TypeNcf, id, []Range{{1, 3}}),
		AppendRanges(nil, TypeLost, id, []Range{{1, 1}, {4, 6}}),
		AppendRanges(nil, TypeNack, id, []Range{{2, 2}}),
		AppendStatus(nil, id, Status{Receiver: 7, Next: 2, Window: 4096, Tag: 3}))
	return out
}

// FuzzParseData: no input panics the DATA decoder, and what it accepts
// is self-consistent.
func FuzzParseData(f *testing.F) {
	for _, b := range seedDatagrams() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseHeader(b); err != nil {
			return
		}
		dh, frames, err := ParseData(b, nil)
		if err != nil {
			return
		}
		if len(frames) != dh.Count {
			t.Fatalf("%d frames, count %d", len(frames), dh.Count)
		}
		for _, fr := range frames {
			hr := fr.Headers()
			for i := 0; i < fr.NumHeaders; i++ {
				if _, _, ok := hr.Next(); !ok {
					t.Fatal("header iterator short")
				}
			}
			if len(fr.Chunk) > 0 && cap(b)-cap(fr.Chunk)+len(fr.Chunk) > len(b) {
				t.Fatal("chunk past the datagram")
			}
		}
	})
}

// FuzzControl: no input panics the HEARTBEAT/END, STATUS and range
// decoders; a STATUS accepted encodes back to the same bytes.
func FuzzControl(f *testing.F) {
	for _, b := range seedDatagrams() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseBeat(b)
		if h, err := ParseHeader(b); err == nil && h.Type == TypeStatus && !h.Tagged {
			if st, err := ParseStatus(b); err == nil && !bytes.Equal(AppendStatus(nil, h.Stream, st), b) {
				t.Fatalf("STATUS %+v does not encode back to %x", st, b)
			}
		}
		rr, err := ParseRanges(b)
		if err != nil {
			return
		}
		for i := 0; i < rr.Len(); i++ {
			if r := rr.At(i); r.From > r.To {
				t.Fatalf("range %v accepted", r)
			}
		}
	})
}

// FuzzReceiver feeds arbitrary datagrams, mixed with valid ones, to a
// Receiver and a Sender: nothing panics, and the receiver's output stays
// in order.
func FuzzReceiver(f *testing.F) {
	seeds := seedDatagrams()
	for _, b := range seeds {
		f.Add(b, uint8(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, at uint8) {
		r, err := NewReceiver(ReceiverConfig{Rand: rand.New(rand.NewPCG(1, 2)), ReorderFrames: 64, MaxGaps: 4})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewSender(SenderConfig{Session: 1, MTU: 512, Flow: FlowConfig{Mode: FlowMin, MaxReceivers: 4}}, simEpoch)
		h := &orderHandler{t: t}
		from := mustAddrPort("127.0.0.1:9")
		now := simEpoch
		for i, d := range seeds {
			if i == int(at)%len(seeds) {
				_ = r.HandleDatagram(now, from, b, h)
				_ = s.HandleControl(now, from, b)
			}
			now = now.Add(time.Millisecond)
			_ = r.HandleDatagram(now, from, d, h)
		}
		r.Poll(now.Add(time.Hour), h)
	})
}

// orderHandler fails if a stream's events go backwards.
type orderHandler struct {
	t    *testing.T
	next map[transport.StreamID]uint64
}

func (h *orderHandler) Deliver(ev *transport.Event) {
	if h.next == nil {
		h.next = map[transport.StreamID]uint64{}
	}
	var id transport.StreamID
	var from, to uint64
	if err := onePart(ev); err != nil {
		h.t.Fatal(err)
	}
	switch ev.Kind {
	case transport.EventMessage:
		id, from, to = ev.Message.Stream, ev.Message.Seq, ev.Message.Seq
	case transport.EventGap:
		id, from, to = ev.Gap.Stream, ev.Gap.From, ev.Gap.To
	default:
		return
	}
	if from < h.next[id] || to < from {
		h.t.Fatalf("%v: %d..%d after %d", ev.Kind, from, to, h.next[id])
	}
	h.next[id] = to + 1
}

func (h *orderHandler) SendNack(netip.AddrPort, []byte)   {}
func (h *orderHandler) SendStatus(netip.AddrPort, []byte) {}
