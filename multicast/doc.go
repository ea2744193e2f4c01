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
// asked: with a Key; without one, an address gets at most three times
// the bytes of the NACKs it sent (a NACK's source address can be
// forged), and the rest of its repairs go to the group.
//
// Importing the package registers the "mcast" URL scheme with package
// transport:
//
//	mcast://239.1.2.3:7000?iface=lo&feed=1&ttl=1
//
// URL parameters: iface (interface name, default lo), feed (stream id,
// 1 to 4294967295, default 1), ttl (0 to 255, default 1; 0 keeps
// datagrams on this host), repairs (multicast or unicast), join (live or
// earliest; with an archive also seq:N and time:T), archive (a log URL,
// see "Archive"), mtu (256 to 65507), rcvbuf, sndbuf (bytes), linger
// (how long Close keeps answering NACKs, e.g. 200ms), spin (how long a
// subscriber polls an empty socket before it sleeps, Config.Spin), loss,
// dup, reorder (probabilities of faults a transport/faultnet.Filter
// injects on the subscriber's receive path, for rehearsing loss), seed
// (of those faults), and keyfile (a file holding the feed's shared key,
// see ReadKeyFile: datagrams are then authenticated). Anything else is an
// error wrapping transport.ErrBadURL, as are a group that is not an IPv4
// multicast address with a port, a parameter given twice or empty, and a
// value out of range.
//
// Multicast itself does not replay: a subscriber starts at the live
// edge, or, with join=earliest, at the oldest message the publisher's
// retransmit window still holds (the window is bounded:
// Sender.WindowDatagrams and WindowBytes), and what is older is reported
// as a Gap. So the URL refuses from=. The transport is not Durable
// (nothing is stored: a publisher's crash loses its window), and has no
// AtLeastOnce (no acknowledgement: a subscriber that stops misses what
// it did not read). An archive adds what it lacks, beside it.
//
// # Archive
//
// A recorder — `brokerless mcast record`, or `brokerless pipe mcast://…
// logd://…` (package transport/pipe) — is one more subscriber of a feed
// that appends every message, with its origin, to a log (a logd or Kafka
// topic, one partition per feed), and a gap marker for whatever it could
// not get. A Subscriber whose Config.Archive names that log (URL
// parameter archive=) reads it (package transport/archive) for what the
// publisher cannot give:
//
//   - History: with Archive.Join earliest, seq:N or time:T (join=), a late
//     joiner replays the archive from there while it holds the live
//     events that arrive, and switches to them where the archive reaches
//     the first one held: no gap, no duplicate (Aeron's replay-merge).
//     The live events held are bounded (Archive.Buffer, BufferBytes); when
//     the live feed outruns the replay, the oldest are dropped and read
//     from the archive instead, the switch waits, and the subscriber says
//     so (a warning, ArchiveStats.LiveDropped).
//   - Repair beyond the window: a loss the engine gives up on (the
//     publisher answered that it no longer holds it, or repair timed out,
//     or the reorder buffer overflowed) is read from the archive before
//     anything is reported; the events that follow wait, in order. A Gap
//     then means the archive lacks it too, with the archive's reason: the
//     recorder's own (a gap marker), transport.GapRetention (the log
//     deleted it), or transport.GapNotArchived (no record of it: the
//     archive's next record comes after it, or none is appended within
//     Archive.Wait). If the archive cannot be read, the engine's reason
//     stands.
//   - The tail of a session that ended without closing (its publisher
//     crashed, and a restarted one replaced it, or it fell silent): the
//     subscriber reads the session's records after the last it delivered
//     until the archive shows the next session (or has nothing more for
//     Archive.Wait), ends the session, then follows the new one. Sessions
//     are never mixed. The session ends where the live events say it did
//     (what the archive lacks of it is a Gap): a late joiner's replay that
//     comes to the next session in the archive before the live feed showed
//     anything waits for the live feed (Archive.Wait at most): the archive
//     may lack the session's tail (its recorder went down with the
//     publisher), which only the live events tell. When the live feed
//     shows nothing in that time (or its events of the session lag
//     behind the archive), where the session ended is unknown: its tail,
//     if it had one, is an open Gap (transport.Gap.Open: from the
//     position after the archive's last record of it, to an end nobody
//     said), and the session ends there (transport.StreamEnd.LastSeq, as
//     far as the subscriber knows). Live events of that tail that come
//     later are dropped, sessions never being mixed: counted
//     (ArchiveStats.LateLive) and logged once (a warning). When the live
//     feed starts with a later session (the subscriber joined after the
//     current one ended), the archive tells the session as it tells any
//     history: it ends at the archive's last record of it.
//   - A session whose publisher closed it: the recorder archives its end
//     (an end marker, transport.EndMarker), so a replay that comes to it
//     ends the session there at once, with the publisher's reason
//     (transport.EndClosed) and no Gap, without waiting for the live
//     feed (ArchiveStats.Ends counts them). Archives written before end
//     markers hold none: a late joiner's replay of them waits, and
//     guesses, as for a crash.
//
// One recorder writes one log. Several recorders of a feed (for
// redundancy) each write their own (one per logd), and a subscriber
// reads one of them. Two pointed at one topic work — every record is
// there twice, and the second copy is dropped (ArchiveStats.Duplicates)
// — but a gap marker of one (it was down) is reported as a Gap even
// when the other's copies of those messages follow it in the topic. The
// subscriber cannot tell: a record does not say which recorder wrote
// it, and the other's copies may come any number of records later, or
// never (it was down too); holding every gap marker, and what follows
// it, until they could no longer come would need a bound no recorder
// promises, and would delay every marker of the usual single recorder.
// The accounting stays exact: those positions are in that one Gap, and
// the copies that follow are dropped as duplicates.
//
// The engine (package reliable) is not told: it recovers and gives up
// as it always does, and the merging of its events with the archive's
// happens after it, on the goroutine that calls Receive.
//
// Filters and receipts: Config.Filter puts a DatagramFilter between a
// subscriber's sockets and its recovery engine (to drop, duplicate,
// delay or reorder datagrams; transport/faultnet.Filter is one), and
// Publisher.PublishReceipt (transport.ReceiptPublisher) says when a
// message has been written to the socket, with its stream and sequence
// number.
//
// Batches: Publisher.PublishBatch and PublishReceipts take many
// messages a call, and Subscriber.ReceiveBatch hands over many events a
// call (transport.BatchSubscriber), as sendmmsg and recvmmsg take many
// datagrams: they spare the lock, the clock read and the event copy
// that a call a message pays for each message.
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
