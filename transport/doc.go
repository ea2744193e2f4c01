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
//
// Beyond the two interfaces, a transport may offer at-least-once
// consumption ([Acknowledger], claimed as [AtLeastOnce]), publish
// receipts ([ReceiptPublisher]) and events handed over in batches
// ([BatchSubscriber]), found by type assertion. Pipes and
// recorders carry a message's [Origin] across in one binary header
// ([HeaderOrigin], its layout documented there), a [Gap] of their
// source as a gap marker ([GapMarker]), so the destination's readers see
// the hole too, and a feed's session its publisher closed as an end
// marker ([EndMarker]), so they can tell its end from a tail they lack.
//
// Layout rule: the project's own capabilities stay top-level packages
// (multicast, webhook, statsd, logd, reliable), each registering its
// scheme if it is a transport; a transport that adapts a client library
// lives under transport/ (transport/kafka on franz-go, transport/zmq on
// go-zeromq/zmq4). Test tools (transporttest, faultnet) live under
// transport/ too, and no production Config refers to them.
package transport
