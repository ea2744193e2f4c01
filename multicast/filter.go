package multicast

import (
	"net/netip"
	"time"
)

// DatagramFilter stands between a Subscriber's sockets and its recovery
// engine: every datagram the Subscriber receives (DATA, heartbeats,
// repairs, NCFs and LOST notices, on the group socket and the unicast
// one alike) is offered to Push, and the engine sees only what Pop hands
// back. A filter may drop a datagram, hand it back twice, or hold it and
// hand it back later, after datagrams that arrived after it; it is how
// tests and the CLI's --simulate-loss rehearse a lossy network
// (transport/faultnet.Filter is one).
//
// The Subscriber calls the methods from its reader goroutine only, one
// at a time, with the time it read from Config.Now. After each read it
// offers what it read, then pops every datagram due, and it wakes by
// itself when NextDue says a held datagram falls due. Nothing is
// allocated on this path by the Subscriber; a filter should not allocate
// either, once warm.
type DatagramFilter interface {
	// Push offers a datagram received at now from from, and reports
	// whether the filter kept it; the Subscriber counts the datagrams
	// not kept in SubscriberStats.FilterDrops. The filter must copy b
	// to keep it: b is reused after Push returns. Every kept datagram
	// reaches the engine through Pop, even one due at once.
	Push(now time.Time, b []byte, from netip.AddrPort) (kept bool)
	// Pop returns a held datagram that is due at or before now, with its
	// source, and false when none is. b must stay valid until the next
	// call to Push or Pop.
	Pop(now time.Time) (b []byte, from netip.AddrPort, ok bool)
	// NextDue returns when the earliest held datagram falls due, and
	// false if the filter holds none.
	NextDue() (time.Time, bool)
}
