// Package archive reads what a recorder wrote of a direct feed: the log
// (a logd or Kafka topic) that `brokerless pipe mcast://… logd://…`, or
// `brokerless mcast record`, fills with every message of the feed and a
// gap marker for whatever it could not get (see package transport/pipe).
// Subscribers of the feed that name that log as their archive read it
// back to get what the feed's publisher can no longer give: history for
// a late joiner, repairs beyond the publisher's retransmit window, and
// the tail of a session whose publisher crashed.
//
// A Reader turns the log's records back into what they stand for in the
// feed: a message of the feed, with its origin stream, sequence number,
// publish time and topic, and its key, headers (without the origin
// headers) and payload; or the Gap a gap marker stands for, with the
// reason the recorder gave; or the StreamEnd an end marker stands for
// (transport.EndMarker: the session's publisher closed it), whose
// position is the session's last (a Seek to the position after it
// lands on the end marker). Records of other feeds, and records without
// origin headers, are skipped and counted.
//
// A feed's records are in one stream of the log (one partition of a
// topic), in the feed's order: sessions in the order they started
// (session numbers grow with their start time), sequence numbers in
// order within a session. So a feed position (Pos: session, sequence) is
// found by a search over the log's positions (Reader.Seek), reading a
// handful of records: the reader first reads the feed's last record,
// and, for a position of the same session, starts where the difference
// of sequence numbers puts it (a record takes one position and at least
// one sequence number), which is usually exact; otherwise it bisects,
// using every record a read returns.
//
// A log's retention may delete records a Reader has yet to read; the
// log then reads on from its new first position, and Reader.Deleted
// says so, since the records on both sides of what was deleted do not
// show it (a message's record does not say how many sequence numbers,
// fragments, it stands for).
//
// The package knows nothing of multicast or Kafka: it reads any
// transport.Log (package transport/kafka implements one for logd:// and
// kafka:// URLs) and names feeds by transport.StreamID.
package archive
