package transporttest_test

import (
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// Hand-made event logs for the checker tests.

var (
	s1 = transport.StreamID{Feed: 1, Session: 0xa1}
	s2 = transport.StreamID{Feed: 1, Session: 0xb2}
	s3 = transport.StreamID{Feed: 2, Session: 0xc3}
	// l1 and l2 are partitions of a log.
	l1 = transport.StreamID{Topic: "t", Partition: 0}
	l2 = transport.StreamID{Topic: "t", Partition: 1}
	// none is the zero StreamID: a stream-start that replaces nothing.
	none = transport.StreamID{}
)

// msg is message index idx of stream id at seq.
func msg(id transport.StreamID, seq uint64, idx int) transport.Event {
	return transport.Event{Kind: transport.EventMessage,
		Message: transport.Message{Stream: id, Seq: seq, Payload: transporttest.Payload(idx, 20)}}
}

func gap(id transport.StreamID, from, to uint64) transport.Event {
	return transport.Event{Kind: transport.EventGap,
		Gap: transport.Gap{Stream: id, From: from, To: to, Reason: transport.GapNoRecovery}}
}

// compacted is a gap that log compaction left: not loss.
func compacted(id transport.StreamID, from, to uint64) transport.Event {
	return transport.Event{Kind: transport.EventGap,
		Gap: transport.Gap{Stream: id, From: from, To: to, Reason: transport.GapCompacted}}
}

func start(id, replaces transport.StreamID, first uint64) transport.Event {
	return transport.Event{Kind: transport.EventStreamStart,
		Start: transport.StreamStart{Stream: id, Replaces: replaces, FirstSeq: first}}
}

func end(id transport.StreamID, last uint64) transport.Event {
	return transport.Event{Kind: transport.EventStreamEnd,
		End: transport.StreamEnd{Stream: id, LastSeq: last, Reason: transport.EndClosed}}
}

func evlog(evs ...transport.Event) []transport.Event { return evs }
