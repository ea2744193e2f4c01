// Package multicast is brokerless's UDP multicast transport: a
// market-data style feed from one publisher to any number of
// subscribers, with lost datagrams recovered by NACK and retransmit
// (package reliable) and anything unrecoverable reported as an explicit
// transport.Gap.
//
// The publisher sends DATA, heartbeats and repairs to the group from a
// unicast socket on the chosen interface; subscribers NACK to that
// socket's address, the source of the DATA they receive. Repairs go to
// the whole group by default (one repair serves every receiver that lost
// the datagram) or, with UnicastRepairs, only to the receiver that
// asked.
//
// Importing the package registers the "mcast" URL scheme with package
// transport:
//
//	mcast://239.1.2.3:7000?iface=lo&feed=1&ttl=1
//
// URL parameters: iface (interface name, default lo), feed (stream id,
// 1 to 4294967295, default 1), ttl (0 to 255, default 1; 0 keeps
// datagrams on this host), repairs (multicast or unicast), join (live or
// earliest), mtu (256 to 65507), rcvbuf, sndbuf (bytes), linger (how
// long Close keeps answering NACKs, e.g. 200ms), loss, dup, reorder
// (probabilities of faults a transport/faultnet.Filter injects on the
// subscriber's receive path, for rehearsing loss), seed (of those
// faults), and keyfile (a file holding the feed's shared key, see
// ReadKeyFile: datagrams are then authenticated). Anything else is an
// error wrapping transport.ErrBadURL, as are a group that is not an IPv4
// multicast address with a port, a parameter given twice or empty, and a
// value out of range.
//
// Multicast does not replay: a subscriber starts at the live edge, or,
// with join=earliest, at the oldest message the publisher's retransmit
// window still holds (the window is bounded: Sender.WindowDatagrams and
// WindowBytes), and what is older is reported as a Gap. So the URL
// refuses from=; replaying from a position needs an archive, which
// mcast:// does not take yet. The transport is not Durable (nothing is
// stored: a publisher's crash loses its window), has no Replay, and no
// AtLeastOnce (no acknowledgement: a subscriber that stops misses what
// it did not read).
//
// Filters and receipts: Config.Filter puts a DatagramFilter between a
// subscriber's sockets and its recovery engine (to drop, duplicate,
// delay or reorder datagrams; transport/faultnet.Filter is one), and
// Publisher.PublishReceipt (transport.ReceiptPublisher) says when a
// message has been written to the socket, with its stream and sequence
// number.
//
// Anyone who can send to the group can send datagrams that look like
// the feed's. Subscribers believe what would end or move a stream only
// from its publisher's address and once the publisher has been silent
// (package reliable, "What a Receiver believes"), and the publisher
// bounds what each address sending NACKs may cost it; with a shared key
// (Config.Key) every datagram is authenticated, and nothing forged is
// believed at all.
//
// Multicast here is IPv4. Tests keep it on the machine: they send on
// the loopback interface only.
package multicast
