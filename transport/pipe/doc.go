// Package pipe forwards every message of one transport into another,
// at least once: the engine of `brokerless pipe FROM TO` and of
// recorders that copy a direct feed into a log.
//
// Each message is written to the destination with its origin (stream,
// position, publish time, topic) in one binary header
// (transport.HeaderOrigin, written by transport.AppendOrigin),
// keeping its key, headers and payload; its topic moves to the origin
// headers, since the destination URL decides where a log writes. A Gap of
// the source is written as a gap marker (transport.GapMarker), so the
// destination's readers see the hole too; the end of a feed's session
// that its publisher closed, as an end marker (transport.EndMarker), so
// they can tell that end from a tail the destination lacks.
//
// The source is acknowledged (transport.Acknowledger) only once the
// destination has accepted the message (transport.ReceiptPublisher;
// durably where the destination is durable), cumulatively and in order,
// so a pipe killed at any moment loses nothing: what it had not
// acknowledged is delivered again. Many messages are in flight at once
// (Config.MaxInFlight), so the pipe keeps up with its source. A source
// that hands over many events at once (a ReceiveBatch method, as
// multicast.Subscriber has) is read that way, one call and one lock hold
// for the events ready. The pipe copies each message once, into memory
// it keeps until the destination's receipt, so a destination that
// publishes in place (package transport/kafka's Publisher, through
// PublishReceiptsInPlace) writes from that copy without one of its own.
//
// A source that is acknowledged may still deliver again, after a
// restart, what the pipe wrote: what it had not acknowledged, and what
// its acknowledgements had not yet made durable (a Kafka consumer group
// commits every few seconds). Pipe.Resume, given the destination's last
// records, drops (and acknowledges) what the destination holds, so that
// nothing is written twice (Core.ResumeAcknowledged). A consumer
// group's member that a rebalance gives a partition mid-run reads the
// destination again when the partition starts (Config.Tail,
// Core.Reread), so that what its previous owner wrote and had not
// committed is dropped too: only what the destination was given since
// the pipe last read it (Core.Unread, Core.RereadSince), nothing when
// nothing was. A partition handed back to the same member is read for
// too: package transport/kafka's GroupSubscriber starts it again (a
// second StreamStart, at the offset it resumes from), as the transport
// contract allows a log's stream to, and the pipe reads for every start
// of a log's stream.
//
// A source that cannot be acknowledged (multicast) is resumed from the
// destination instead: on start the pipe reads the destination's last
// records (transport.TailReader), drops the messages it had already
// written, and where the source no longer holds the messages that follow
// the last one written, writes a gap marker with the exact range and
// reason transport.GapSourceDown.
//
// A log's source stream that the destination's last records do not
// reach is looked for further back, page by page (Config.Back, a
// transport.BackReader; Core.LookFor and Core.AddPage), before its first
// event is taken. A page that cannot be read fails the pipe, but at a
// stream start read for (Config.Tail), where it is one of the start's
// reads: bounded by Config.RereadTimeout, and counted when it fails
// (the stream then goes on from what was read: written again at worst).
//
// A source's stream is known by its name alone: a log's by its topic
// and partition, as transport.StreamID carries no topic ID or epoch
// (nor does a message), so the pipe cannot tell a source topic deleted
// and created again under the same name from the old one. The new
// topic's offsets start again at 0, and those that the destination's
// records read by Resume, Core.Reread or a look-back page hold of the
// old topic's partition are taken as held: its messages at them are
// dropped and, from a consumer group, acknowledged — lost to the
// destination — up to the highest position of the old partition read
// (past it they are written). Once a pipe has written the new topic's
// positions after the old ones, an acknowledged source's stream is
// found going backwards and no longer resumed (Stats.Interleaved), but
// what was dropped until then stays lost. Point a pipe whose source
// topic was recreated at a new destination topic.
//
// A destination deleted and created again under the same name is no
// better known: its offsets start again at 0, and what the pipe read of
// the old one stays taken as held. A start of a log's stream read for
// (Config.Tail) that finds a destination stream ending before what was
// read of it, or holding nothing, reads its full tail again
// (Core.Unread) and forgets what was read of it before (Core.Reread):
// the source streams it held are resumed from what the new one holds
// alone (forgetting costs at worst writing again what the destination
// still holds, older than its tail; keeping would drop what it lost).
// Until such a start — for good without Config.Tail, and when the new
// destination has grown past where the old one was read by then, which
// its offsets cannot tell from growth — the source's messages at the
// positions read of the old destination, when the source gives them
// again (a partition's start, or given back to the member), are dropped
// and, from a consumer group, acknowledged: lost to the destination.
// What the source had acknowledged before the destination was made
// again is not given again at all. Restart a pipe (each member of its
// group) whose destination was made again: Resume reads the new one
// alone.
//
// Core holds every decision and does no I/O, so it is tested without
// sockets; Pipe runs it between a subscriber and a publisher.
package pipe
