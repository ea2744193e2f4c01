// Package zmq is a ZeroMQ transport: PUB/SUB fan-out with topic-prefix
// subscriptions, wire-compatible with libzmq 4.x (ZMTP 3.0 over tcp://
// and ipc://), whose messages are numbered so that loss shows as gaps,
// with a bounded queue per subscriber, a forwarder whose subscriptions
// travel, and load balancing with redelivery. It registers the URL
// schemes zmq+tcp:// and zmq+ipc:// with package transport.
//
// # Built on go-zeromq/zmq4, around its limits
//
// The ZMTP handshake and framing are github.com/go-zeromq/zmq4's Conn
// (zmq4.Open). Its sockets are not used: in v0.17.0 a PUB has one queue
// and one writer for all subscribers, so one slow subscriber stalls the
// rest and memory grows without bound (#151); XPUB swallows
// subscriptions, so an XSUB/XPUB proxy forwards none (#108, #136); PUSH
// sends every message to every peer (#158); Recv takes no deadline (#37,
// #74) and a socket redials only its last endpoint. Here a socket is a
// set of ZMTP connections, each with its own bounded queue and writer;
// connected endpoints are all redialled with exponential backoff;
// Receive honours a context; Close ends every goroutine. Beneath zmq4,
// each connection reads through a checker that refuses a frame or
// message larger than MaxMessageBytes before zmq4 allocates it (zmq4
// allocates whatever length a peer announces), cuts a subscriber's frame
// longer than a publisher holds (a subscription it refuses whole too),
// lets a frame over 64 KiB
// through only once its size fits in the socket's MaxPendingBytes and
// fails its connection if its body then stalls (so headers alone
// cannot make zmq4 allocate more), as it does if a message, once over
// 64 KiB, stalls (zmq4 holds its frames until its last): stalling is
// taking over FrameTimeout for the next 64 KiB, so a slow but steady
// peer is not cut off, and a message takes at most
// (MaxMessageBytes/64 KiB+1)*FrameTimeout; it refuses a ZMTP 1.0 or 2.0 greeting
// at once (ErrVersion; zmq4 would wait for the rest of a ZMTP 3 one), a
// message frame before the peer's handshake command and a malformed
// READY (zmq4 panics on one), and takes PINGs out of the stream so that they are answered by
// the connection's one writer (zmq4 answers from the reader, which may
// interleave with a write). ZMTP 3.1 heartbeats
// are libzmq's: a PONG (one owed at most, echoing the latest PING's
// context, 16 bytes at most) and our own PINGs (Config.PingInterval)
// bypass the queue bounds and go before the next batch; anything that
// arrives counts as liveness, a peer's TTL is honoured, and
// PingTimeout does not count silence while our reader waits for the
// application.
//
// # Messages and streams
//
// A message is three frames: the topic (subscriptions are prefixes of
// it, as in libzmq), a header frame, and the payload. The header frame,
// big-endian:
//
//	off len
//	0   2  magic 0xB7 0x5A
//	2   1  version 1
//	3   1  kind: 1 message, 2 packed, 3 heartbeat, 4 end
//	4   4  feed: the publisher's stable id (Config.Feed)
//	8   8  session: the stream's id, random per publisher start and topic
//	16  8  seq: the message's sequence number (packed: the first's;
//	       heartbeat, end: the next the stream would use); the first is 1
//	24  8  time: Unix nanoseconds (packed: the first message's)
//	32     message: key and headers, each length a uvarint: key length,
//	       key, header count, then per header name length, name, value
//	       length, value. packed: uvarint count of messages.
//
// Every varint is written the shortest way, and a longer one is refused.
// A packed message's third frame holds its count messages back to back:
// zigzag-varint time minus the header's time, key and headers as above,
// uvarint payload length, payload. Heartbeats and ends have two frames.
//
// Each topic of each publisher start is a stream: StreamID{Feed: feed,
// Session: session}, Seq the sequence number. A subscriber delivers a
// stream in order and never twice, and reports as a Gap every message of
// it that did not arrive after the first that did (a subscriber joins at
// the live edge). A quiet stream sends heartbeats, so a lost tail is
// reported too, and a closing publisher ends its streams. Several
// publishers may send one topic at once (several PUBs connected to a
// bound SUB, a proxy with several upstream publishers): each session is
// a stream of its own, whatever the feeds. A new session of a feed and
// topic replaces an older one (StreamStart.Replaces, and the old one's
// StreamEnd) only when that one is over: it sent its end, or the
// connection it came on closed before the new one arrived. A zero
// Config.Feed is ProcessFeed, random per process; a publisher whose
// restarts should be recognised sets Feed. A header frame that cannot be
// read, with sequence number 0, or a pack whose body does not hold the
// count its header says, is dropped and counted without touching its
// stream.
//
// A publisher that sends no header frame (plain libzmq) is still
// received: its messages get Feed 0, a session drawn per connection and
// sequence numbers counted on arrival, which say nothing of what it
// dropped; its stream ends when its connection closes, and several such
// publishers on one topic are separate streams. One frame is the
// payload; with more, the first is the topic, the last the payload, and
// those between are headers named "zmq.frame". Once a connection has
// brought such a message, a later one whose second frame merely begins
// as a header frame does, and cannot be read as one, is plain too.
package zmq
