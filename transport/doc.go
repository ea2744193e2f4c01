// Package transport is the contract every brokerless transport meets.
//
// A transport moves [Message] values from a [Publisher] to one or more
// [Subscriber] values. A subscriber receives [Event] values: messages in
// sequence order per stream, and — whenever something can no longer be
// recovered — an explicit [Gap], never a silent hole. Publisher restarts
// are visible too: every publisher start draws a new random session, so a
// subscriber sees a [StreamStart] that names the session it replaces.
//
// Each transport declares what it guarantees as [Semantics] flags
// (ordered, gap reports, retransmit within a window, deduplicated,
// durable, replay). The conformance suite in package transporttest checks
// each claim against every transport.
//
// Transports register a URL scheme with [Register]; applications open
// them by URL:
//
//	ep, err := transport.Open(ctx, "mcast://239.1.2.3:7000?iface=lo")
//	pub, err := ep.Publisher(ctx)
//	sub, err := ep.Subscriber(ctx)
//
// A program must import the package of each transport it uses (for
// example github.com/brokerless/brokerless/multicast) so that its scheme
// is registered, as with database/sql drivers.
package transport
