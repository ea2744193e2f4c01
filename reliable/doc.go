// Package reliable is the sequence, gap, NACK and retransmit engine of
// brokerless's multicast transport. It is sans-IO: it owns no sockets,
// goroutines or clocks. Callers hand it datagrams and the current time;
// it hands back datagrams to send, events to deliver, and the time it
// next needs attention. Everything it keeps is bounded, and what it
// drops is counted.
//
// A [Sender] packs messages into datagrams up to an MTU (many messages
// per datagram, as MoldUDP64 and Aeron do: the kernel's cost is per
// datagram), keeps a retransmit window bounded in datagrams and bytes,
// sends heartbeats when idle so tail loss is noticed, and answers NACKs
// with an NCF to the group, rate-limited repairs, and an explicit LOST
// notice for anything that has left its window. What each address that
// sends NACKs may cost it, in NACKs and in repair bytes, is bounded
// (SenderConfig.SourceNackRate and the fields after it), and, with
// UnicastRepairs, a repair goes to a NACK's source address only while
// that address has sent at least a third of the bytes sent to it, or a
// key vouches for it (otherwise it goes to the group): forged NACKs
// cannot turn it into an amplifier against a third party. What they
// can still cause on the group is bounded by those budgets: per source
// address, at most twice the feed's own bandwidth plus twice the window
// saved up (budget.go). With flow control (SenderConfig.Flow, flow.go),
// it never lets its window pass the slowest receiver that reports with
// STATUS, nor sends further past that receiver than its announced
// window: Publish is held instead (ErrFlowControl), and a receiver
// silent for ReceiverTimeout is no longer waited for, nor one that said
// it leaves (Receiver.Leave, a leaving STATUS: ReceiversLeft); a STATUS
// it sent before, delivered after, does not bring it back
// (StatusAfterLeave). Without a key,
// flow control believes any STATUS (any address, any receiver id) that
// names a position the window still holds: a forger can hold the
// publisher as a slow receiver would, renewing it every
// ReceiverTimeout; a STATUS naming a position the window no longer
// holds is ignored (FlowBehind). With a key only key holders' STATUS
// counts.
//
// A [Receiver] detects gaps, waits a randomized back-off (RFC 5401) and
// NACKs them as ranges, holds back when an NCF or the repair arrives
// first (so many receivers losing the same datagram cause about one
// repair), discards duplicates, reorders within a bounded buffer,
// reassembles fragments, and reports a [transport.Gap] for whatever
// cannot be recovered, merging adjacent losses into one. A new session
// on a known feed is a publisher restart: once the old stream has
// fallen silent, it is closed out, never mixed with the new one. What
// would end or move a stream is believed only from its own source, as
// "What a Receiver believes" explains, or with a shared key.
//
// # What a Receiver believes
//
// Without a key, anyone who can send to the group and has read one
// datagram of a stream can forge more. Three kinds of claim would end or
// move a stream, and so lose everything after them: a sequence number
// far ahead (everything up to it given up, the real messages after it
// dropped as duplicates), an END (the real messages after it never
// delivered nor reported) and a new session of the feed (a publisher
// restart: the real session becomes stale). Such claims are believed
// only once the stream's publisher has fallen silent at the position
// the receiver knows, and a jump or an END only from the stream's own
// source address (a new session may come from anywhere: a restarted
// publisher has a new port, a failover another host, so anyone who can
// send to the group can take a feed whose publisher is silent for
// ConfirmTime):
//
//   - A stream is tied to the source address (IP and port) of the
//     datagram that created it; datagrams of its session from another
//     source are dropped (WrongSource), and NACKs go to that source only.
//   - A datagram whose last sequence number is more than MaxJump past
//     the highest seen (or, for a stream that joined at the window's
//     low edge with JoinEarliest, past the publisher's position when
//     the stream met it, if higher) is dropped (Jumps), unless the jump
//     is confirmed: a second datagram agrees with it (within MaxJump of
//     it) and no datagram at the known position (an original DATA, or
//     a heartbeat, which an idle publisher sends at least every
//     HeartbeatMax) has arrived for ConfirmTime. That is what a real outage looks like:
//     the publisher's datagrams stop, then reappear further on; a forged
//     jump is contradicted by the live stream. As in PGM, where a
//     receiver takes nothing outside the window its source advertises,
//     and Aeron, which drops frames beyond its receiver window, a
//     datagram is judged against the position already known; unlike
//     them, a long outage is still detected, as a confirmed jump
//     (JumpsConfirmed), whose loss is then repaired or reported as a Gap
//     like any other. The price: the datagrams dropped while the jump
//     was being confirmed are recovered only if still in the publisher's
//     window.
//   - An END is held for ConfirmTime before the stream ends; a heartbeat
//     or an original DATA past the END's last sequence number cancels it
//     (EndsRejected): the publisher is alive. An END claiming less than
//     what has already arrived, or more than MaxJump past it, is rejected
//     at once. Everything up to the END's last sequence number is
//     delivered or reported in a Gap before StreamEnd.
//   - Another session of a feed replaces its stream only once that
//     stream has been silent for ConfirmTime. The new session's
//     datagrams that came meanwhile are held, up to HoldBytes
//     (RestartsHeld), and handed to its stream once it is believed, in
//     the order they came; what did not fit (RestartsDeferred) is
//     recovered by NACK. A session that ended with an END or was
//     replaced never comes back (Stale). One that ended only because
//     nothing came from it for IdleTimeout (an outage looks the same as
//     a publisher gone) resumes where it left off when new data or a
//     heartbeat reaching past that position comes from its source
//     (Resumed): what it sent meanwhile is repaired or reported as a
//     Gap; a replay of its older datagrams stays stale (resume.go).
//
// A forger who also spoofs the publisher's source address can still be
// believed while the publisher is silent, and can always forge
// datagrams within MaxJump of the stream's position. Against that a
// shared key is the defence: with SenderConfig.Key and
// ReceiverConfig.Key set, every datagram carries an authentication tag,
// and what a tagged datagram claims is believed at once (it comes from
// a key holder). A Receiver does not detect replayed datagrams, but
// replaying what a publisher already sent moves nothing: sequence
// numbers below the stream's position are duplicates, an old session
// stays stale. A Sender does (Replayed): it takes each counter of a
// receiver's trailer once, within the last 64 of them, so a STATUS
// replayed after its receiver went does not keep it waited for. It
// remembers the counters of as many receivers as it keeps subkeys (256,
// or MaxNackSources or Flow.MaxReceivers if more); a replay from one it
// forgot is taken again.
// Nor is a stream tied to an address with a key: a DATA, HEARTBEAT or
// END is taken from any address, and NACKs go to (and NCFs and LOST
// notices are taken only from) the address of the last datagram that
// reached past the highest sequence number seen, which only the
// publisher can send. Otherwise a replay sent from elsewhere that
// happened to arrive first would tie the stream to the replayer.
//
// # Wire format, version 1
//
// All integers are big-endian. Every datagram starts with a 16-byte
// header:
//
//	0   2  magic "BL" (0x42 0x4C)
//	2   1  version: bits 0-6 = 1; bit 7 (0x80) set = authenticated, the
//	       datagram ends with the 36-byte trailer below
//	3   1  type: 1 DATA, 2 HEARTBEAT, 3 END, 4 NACK, 5 NCF, 6 LOST,
//	       7 STATUS
//	4   4  feed: the logical stream, stable across publisher restarts
//	8   8  session: random per publisher start, never 0
//
// Datagrams with another magic or version are foreign and ignored; the
// version byte is how a future format will be told apart. Code that
// predates authentication sees an authenticated datagram (version byte
// 0x81) as another version, and ignores it. The layouts below describe
// a datagram without its trailer.
//
// DATA carries frames with consecutive sequence numbers:
//
//	16  1  flags: bit 0 = repair (a retransmission); bit 1 = the
//	       publisher runs without flow control (what leaves its window
//	       is lost to receivers it outpaced: transport.GapOutpaced);
//	       bit 2 = padded (zero bytes follow the last frame, so that
//	       full datagrams have one size for UDP GSO); other bits 0
//	17  1  reserved, 0
//	18  2  frame count, ≥ 1
//	20  8  sequence number of the first frame, ≥ 1 (frame i has first+i)
//	28  8  low: oldest sequence in the publisher's window when built
//	36  8  base time, Unix nanoseconds
//	44     frames, exactly count of them, then nothing, or, when
//	       padded, only zero bytes
//
// A frame:
//
//	0   2  length of what follows the flags byte
//	2   1  flags: 0x01 BEGIN (first fragment), 0x02 END (last fragment),
//	       0x04 TOPIC, 0x08 KEY, 0x10 HEADERS (only with BEGIN)
//	BEGIN only:
//	       varint   publish time − base time, nanoseconds (zig-zag)
//	       TOPIC:   u8 length, bytes
//	       KEY:     uvarint length, bytes
//	       HEADERS: u8 count ≥ 1, then per header u8 key length, key,
//	                uvarint value length, value
//	       not END: uvarint total payload length of the message
//	rest   payload bytes
//
// A message that fits one frame has BEGIN|END. A larger one is split
// into frames with consecutive sequence numbers: the first has BEGIN,
// the last END; a message's sequence number is its first frame's.
// Sequence numbers therefore count frames, and skip inside fragmented
// messages.
//
// HEARTBEAT (sent when idle: 1 ms after the last data, then doubling up
// to 100 ms) and END (sent EndRepeats times when the publisher closes,
// 1, 2, 4, 8 ms apart by default, so that one of them arrives) carry:
//
//	16  8  next: the sequence the next new message will take
//	24  8  low: oldest sequence still in the retransmit window (= next
//	       when empty)
//
// NACK (receiver → publisher, unicast to the address DATA came from),
// NCF (publisher → group: "NACK heard, repair coming") and LOST
// (publisher → group: "these are gone") carry ranges:
//
//	16  1  range count, 1..255
//	17  1  reserved, 0
//	18     count × (from u64, to u64), inclusive, ascending, disjoint
//
// STATUS (receiver → publisher, unicast to the address DATA came from,
// every ReceiverConfig.StatusInterval and whenever a sixteenth of its
// window has been consumed, as Aeron's status messages) says how far
// the receiver has got, for a publisher with flow control:
//
//	16  8  receiver: a random number naming the receiver, never 0
//	24  8  next: the next sequence number the receiver needs (everything
//	       below it delivered or reported lost); 0 = leaving: the
//	       receiver is going away (Receiver.Leave, as its subscriber
//	       closes) and the publisher stops waiting for it at once;
//	       for ReceiverTimeout after, it ignores a STATUS from that
//	       receiver naming no more than its own next sequence number
//	       when the leaving one came (sent before it, reordered).
//	       Publishers that predate it drop such a STATUS as malformed
//	       (sequence 0) and time the receiver out as before
//	32  4  window: bytes of datagrams the receiver can take past next
//	36  8  tag: the receiver's flow-control tag, 0 for none
//
// Repairs are the original DATA datagrams with the repair flag set,
// multicast to the group by default or unicast to the receiver that
// asked.
//
// # Authentication tag
//
// With a key, every datagram, in both directions, has bit 7 of its
// version byte set and ends with a trailer; the MTU includes it:
//
//	n-36  12  salt: drawn from crypto/rand when the Sender or Receiver
//	          that sent the datagram started; names its subkey
//	n-24   8  counter: that sender's datagrams numbered from 0, one per
//	          datagram sent (repairs included), never reused
//	n-16  16  tag: AES-128-GCM, with the subkey, nonce 4 zero bytes then
//	          the counter, empty plaintext, and as additional data bytes
//	          0..n-17 (the datagram with its version byte as sent, the
//	          salt and the counter): that is, AES-GMAC
//
// The subkey is the first 16 bytes of HMAC-SHA256(key, "brokerless
// reliable v1 GMAC subkey" || salt). A receiver keeps the subkeys of the
// senders it has verified (a publisher, those of as many receivers as
// it tracks), derives the others at most 20,000 per second
// (bursts of 1,000), and drops a datagram whose tag is missing or wrong
// (Unauthenticated). Why GMAC and why a subkey per sender: see auth.go.
package reliable
