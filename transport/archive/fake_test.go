package archive

import (
	"context"
	"fmt"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// fakeLog is a transport.Log in memory: streams of records, a Read
// returning at most batch of them.
type fakeLog struct {
	streams map[transport.StreamID][]transport.Message
	first   map[transport.StreamID]uint64 // log start (records below are deleted)
	batch   int
	reads   int
}

func newFakeLog(batch int) *fakeLog {
	return &fakeLog{streams: map[transport.StreamID][]transport.Message{}, first: map[transport.StreamID]uint64{}, batch: batch}
}

var part0 = transport.StreamID{Topic: "t", Partition: 0}

// add appends a record to stream s at the next position.
func (l *fakeLog) add(s transport.StreamID, m transport.Message) {
	m.Stream, m.Seq = s, uint64(len(l.streams[s]))
	l.streams[s] = append(l.streams[s], m)
}

func (l *fakeLog) Streams(context.Context) ([]transport.StreamID, error) {
	var ids []transport.StreamID
	for p := int32(0); ; p++ {
		id := transport.StreamID{Topic: "t", Partition: p}
		if _, ok := l.streams[id]; !ok {
			return ids, nil
		}
		ids = append(ids, id)
	}
}

func (l *fakeLog) Bounds(_ context.Context, s transport.StreamID) (uint64, uint64, error) {
	return l.first[s], uint64(len(l.streams[s])), nil
}

func (l *fakeLog) PositionAt(_ context.Context, s transport.StreamID, t time.Time) (uint64, error) {
	rs := l.streams[s]
	for i := l.first[s]; i < uint64(len(rs)); i++ {
		if !rs[i].Time.Before(t) {
			return i, nil
		}
	}
	return uint64(len(rs)), nil
}

func (l *fakeLog) Read(ctx context.Context, s transport.StreamID, pos uint64) ([]transport.Message, error) {
	l.reads++
	rs := l.streams[s]
	pos = max(pos, l.first[s])
	if pos >= uint64(len(rs)) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	end := min(uint64(len(rs)), pos+uint64(l.batch))
	out := make([]transport.Message, 0, end-pos)
	for _, m := range rs[pos:end] {
		m.Headers = append([]transport.Header(nil), m.Headers...) // the caller's, as Read promises
		out = append(out, m)
	}
	return out, nil
}

func (l *fakeLog) Close() error { return nil }

// recorded is a record a recorder writes for message seq of stream.
func recorded(stream transport.StreamID, seq uint64, payload string) transport.Message {
	hs := []transport.Header{{Key: "app", Value: []byte("h")}}
	hs = transport.AppendOrigin(hs, transport.Origin{Stream: stream, Seq: seq, Time: time.Unix(0, int64(seq)), Topic: "AAPL"})
	return transport.Message{Key: []byte("k"), Headers: hs, Payload: []byte(payload), Time: time.Unix(0, int64(seq))}
}

// asciiRecorded is the record a recorder wrote for message seq of
// stream before the binary origin header: its origin in ASCII headers.
func asciiRecorded(stream transport.StreamID, seq uint64, payload string) transport.Message {
	m := recorded(stream, seq, payload)
	m.Headers = append(m.Headers[:1],
		transport.Header{Key: transport.HeaderOriginStream, Value: []byte(transport.FormatStreamID(stream))},
		transport.Header{Key: transport.HeaderOriginSeq, Value: fmt.Appendf(nil, "%d", seq)},
		transport.Header{Key: transport.HeaderOriginTime, Value: fmt.Appendf(nil, "%d", seq)},
		transport.Header{Key: transport.HeaderOriginTopic, Value: []byte("AAPL")},
	)
	return m
}

// asciiMarker is the record a recorder wrote for a gap before the
// binary origin header.
func asciiMarker(stream transport.StreamID, from, to uint64, why transport.GapReason) transport.Message {
	return transport.Message{Time: time.Unix(0, int64(from)), Headers: []transport.Header{
		{Key: transport.HeaderOriginStream, Value: []byte(transport.FormatStreamID(stream))},
		{Key: transport.HeaderOriginSeq, Value: fmt.Appendf(nil, "%d", from)},
		{Key: transport.HeaderOriginTime, Value: fmt.Appendf(nil, "%d", from)},
		{Key: transport.HeaderGap, Value: fmt.Appendf(nil, "%d-%d %d", from, to, why)},
	}}
}

// marker is the record a recorder writes for a gap.
func marker(stream transport.StreamID, from, to uint64, why transport.GapReason) transport.Message {
	return transport.GapMarker(transport.Gap{Stream: stream, From: from, To: to, Reason: why}, time.Unix(0, int64(from)))
}

func sess(feed uint32, s uint64) transport.StreamID {
	return transport.StreamID{Feed: feed, Session: s}
}

func payload(s transport.StreamID, seq uint64) string { return fmt.Sprintf("%x/%d", s.Session, seq) }
