package reliable

import (
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

type fixedRand uint64

func (f fixedRand) Uint64() uint64 { return uint64(f) }

// countHandler counts what a Receiver produces.
type countHandler struct {
	events, messages, gaps, nacks, statuses int
}

func (h *countHandler) Deliver(ev *transport.Event) {
	h.events++
	switch ev.Kind {
	case transport.EventMessage:
		h.messages++
	case transport.EventGap:
		h.gaps++
	}
}

func (h *countHandler) SendNack(netip.AddrPort, []byte)   { h.nacks++ }
func (h *countHandler) SendStatus(netip.AddrPort, []byte) { h.statuses++ }

func mustAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// onePart checks that an event holds only the part its Kind names: a
// handler that keeps the event whole must not find an earlier event's
// gap or stream in it.
func onePart(ev *transport.Event) error {
	parts := map[transport.EventKind]any{
		transport.EventMessage:     ev.Message,
		transport.EventGap:         ev.Gap,
		transport.EventStreamStart: ev.Start,
		transport.EventStreamEnd:   ev.End,
	}
	for kind, part := range parts {
		if kind != ev.Kind && !reflect.ValueOf(part).IsZero() {
			return fmt.Errorf("a %v event holds a %v part: %+v", ev.Kind, kind, part)
		}
	}
	return nil
}

// recordHandler keeps every event (payloads copied) and counts NACKs.
type recordHandler struct {
	evs    []transport.Event
	msgs   [][]byte
	nacks  int
	onNack func([]byte)
}

func (h *recordHandler) Deliver(ev *transport.Event) {
	e := *ev
	if ev.Kind == transport.EventMessage {
		e.Message.Payload = append([]byte(nil), ev.Message.Payload...)
		h.msgs = append(h.msgs, e.Message.Payload)
	}
	h.evs = append(h.evs, e)
}

func (h *recordHandler) SendNack(_ netip.AddrPort, b []byte) {
	h.nacks++
	if h.onNack != nil {
		h.onNack(b)
	}
}

func (h *recordHandler) SendStatus(netip.AddrPort, []byte) {}

// gapsOf returns the Gap events h got.
func (h *recordHandler) gapsOf() []transport.Gap {
	var gs []transport.Gap
	for _, e := range h.evs {
		if e.Kind == transport.EventGap {
			gs = append(gs, e.Gap)
		}
	}
	return gs
}

// listeningReceiver is a Receiver listening since simEpoch, the id of a
// stream that began then, the address it comes from and a handler
// recording the Receiver's events.
func listeningReceiver(t *testing.T) (*Receiver, transport.StreamID, netip.AddrPort, *recordHandler) {
	t.Helper()
	r, err := NewReceiver(ReceiverConfig{Rand: fixedRand(0), ListenSince: simEpoch})
	if err != nil {
		t.Fatal(err)
	}
	return r, transport.StreamID{Feed: 1, Session: NewSession(simEpoch, fixedRand(1))}, mustAddrPort("127.0.0.1:5000"), &recordHandler{}
}
