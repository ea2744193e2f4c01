package reliable

import (
	"net/netip"

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
