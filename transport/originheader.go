package transport

import (
	"encoding/binary"
	"fmt"
	"time"
)

// HeaderOrigin carries a message's origin in one binary header, as
// pipes and recorders write it: version 1 of the layout below, every
// integer big-endian (Kafka's own byte order), so that any Kafka client
// can decode it (OriginValue.Decode does, and AppendOriginValue writes
// it).
//
//	offset  size  field
//	0       1     version: 1
//	1       1     flags: 0x01 the origin stream is a log's (topic and
//	              partition), else a feed's (feed and session);
//	              0x02 the record is a gap marker; 0x04 the record
//	              is an end marker (not with 0x02); other bits 0
//	2       8     seq: the position in the origin stream (a gap
//	              marker's first, From; an end marker's LastSeq),
//	              uint64
//	10      8     time: the publish time, Unix nanoseconds, int64
//	18            the origin stream: a feed's is feed (uint32) then
//	              session (uint64), 12 bytes; a log's is partition
//	              (int32, ≥ 0), then its topic: length (uint16, ≥ 1)
//	              and bytes
//	              a gap marker only: To (uint64, ≥ seq), then reason
//	              (uint8, ≥ 1, a GapReason), 9 bytes
//	              an end marker only: reason (uint8, ≥ 1, an
//	              EndReason), 1 byte
//	              the message's topic in the origin: length (uint16, 0
//	              when it had none) and bytes
//
// Nothing follows; a value of another version, with other flags, too
// short or too long is refused (ErrBadOrigin).
//
// The end marker's flag (0x04) came after the gap marker's, in the same
// version 1: every value written before reads as it did, and a reader
// from before refuses an end marker's value as one with unknown flags,
// so it skips the record as malformed — never takes it for a message
// or a gap of the feed (an archive's Reader counted it in
// Stats.Malformed, a pipe's Resume in MalformedTail; a kafka:// or
// logd:// Subscriber, which delivers a log's records as they are,
// delivered it as one, counted in MalformedMarkers). A new version
// number would have done the same, at the cost of a second layout.
//
// A message of feed 1 with topic "AAPL" takes 36 bytes (the ASCII
// headers of earlier versions took about 110). A later layout takes a new version number; readers
// still read version 1, and the ASCII headers (HeaderOriginStream and
// the others), which archives written before hold.
const HeaderOrigin = "brokerless.origin"

// OriginVersion is the version of HeaderOrigin's layout that
// AppendOriginValue writes.
const OriginVersion = 1

// Flags of HeaderOrigin's value.
const (
	originFlagLog = 0x01
	originFlagGap = 0x02
	originFlagEnd = 0x04
)

// originFixed is the size of the fields every value has: version,
// flags, seq and time.
const originFixed = 18

// OriginValue is HeaderOrigin's value decoded, without copying: its
// byte slices alias the value.
type OriginValue struct {
	// Log: the origin stream is a log's (LogTopic, Partition), else a
	// feed's (Feed, Session).
	Log       bool
	Feed      uint32
	Session   uint64
	LogTopic  []byte
	Partition int32
	Seq       uint64
	// Time is the publish time, Unix nanoseconds.
	Time int64
	// Topic is the message's topic in the origin; empty when none.
	Topic []byte
	// Gap: the record is a gap marker for Seq..GapTo, for GapReason.
	Gap       bool
	GapTo     uint64
	GapReason GapReason
	// End: the record is an end marker: the origin stream ended after
	// Seq (its LastSeq), for EndReason.
	End       bool
	EndReason EndReason
}

// Stream is the origin stream. A log's topic is made a string (one
// allocation).
func (v *OriginValue) Stream() StreamID {
	if v.Log {
		return StreamID{Topic: string(v.LogTopic), Partition: v.Partition}
	}
	return StreamID{Feed: v.Feed, Session: v.Session}
}

// Origin is the value as an Origin (the topics made strings).
func (v *OriginValue) Origin() Origin {
	return Origin{Stream: v.Stream(), Seq: v.Seq, Time: time.Unix(0, v.Time), Topic: string(v.Topic)}
}

// Decode reads a HeaderOrigin value (see its layout) into v. On error v
// is left partly filled.
func (v *OriginValue) Decode(b []byte) error {
	if len(b) < originFixed {
		return fmt.Errorf("%w: %s: %d bytes, want at least %d", ErrBadOrigin, HeaderOrigin, len(b), originFixed)
	}
	if b[0] != OriginVersion {
		return fmt.Errorf("%w: %s: version %d, this reader knows %d", ErrBadOrigin, HeaderOrigin, b[0], OriginVersion)
	}
	flags := b[1]
	if flags&^(originFlagLog|originFlagGap|originFlagEnd) != 0 {
		return fmt.Errorf("%w: %s: unknown flags %#x", ErrBadOrigin, HeaderOrigin, flags)
	}
	v.Log, v.Gap, v.End = flags&originFlagLog != 0, flags&originFlagGap != 0, flags&originFlagEnd != 0
	if v.Gap && v.End {
		return fmt.Errorf("%w: %s: flags %#x: a gap marker and an end marker", ErrBadOrigin, HeaderOrigin, flags)
	}
	v.Seq = binary.BigEndian.Uint64(b[2:])
	v.Time = int64(binary.BigEndian.Uint64(b[10:]))
	rest := b[originFixed:]
	short := func() error { return fmt.Errorf("%w: %s: %d bytes, cut short", ErrBadOrigin, HeaderOrigin, len(b)) }
	if v.Log {
		if len(rest) < 6 {
			return short()
		}
		v.Partition = int32(binary.BigEndian.Uint32(rest))
		n := int(binary.BigEndian.Uint16(rest[4:]))
		rest = rest[6:]
		if v.Partition < 0 || n == 0 {
			return fmt.Errorf("%w: %s: partition %d, topic of %d bytes", ErrBadOrigin, HeaderOrigin, v.Partition, n)
		}
		if len(rest) < n {
			return short()
		}
		v.LogTopic, v.Feed, v.Session = rest[:n:n], 0, 0
		rest = rest[n:]
	} else {
		if len(rest) < 12 {
			return short()
		}
		v.Feed = binary.BigEndian.Uint32(rest)
		v.Session = binary.BigEndian.Uint64(rest[4:])
		v.LogTopic, v.Partition = nil, 0
		rest = rest[12:]
	}
	v.GapTo, v.GapReason = 0, 0
	if v.Gap {
		if len(rest) < 9 {
			return short()
		}
		v.GapTo, v.GapReason = binary.BigEndian.Uint64(rest), GapReason(rest[8])
		rest = rest[9:]
		if v.GapTo < v.Seq || v.GapReason == 0 {
			return fmt.Errorf("%w: %s: gap %d-%d reason %d: want FROM ≤ TO and a reason", ErrBadOrigin, HeaderOrigin, v.Seq, v.GapTo, v.GapReason)
		}
	}
	v.EndReason = 0
	if v.End {
		if len(rest) < 1 {
			return short()
		}
		v.EndReason = EndReason(rest[0])
		rest = rest[1:]
		if v.EndReason == 0 {
			return fmt.Errorf("%w: %s: end marker without a reason", ErrBadOrigin, HeaderOrigin)
		}
	}
	if len(rest) < 2 {
		return short()
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) != n {
		return fmt.Errorf("%w: %s: topic of %d bytes in %d", ErrBadOrigin, HeaderOrigin, n, len(rest))
	}
	v.Topic = nil
	if n > 0 {
		v.Topic = rest[:n:n] // as LogTopic: an append cannot reach past the value
	}
	return nil
}

// maxOriginText is the longest topic (of a log stream, or of a message)
// HeaderOrigin's layout can hold.
const maxOriginText = 1<<16 - 1

// AppendOriginValue appends o's HeaderOrigin value to b; with a gap g,
// that of g's marker (g.From is its seq, o.Seq is ignored). A topic
// longer than 65,535 bytes is cut to that (Kafka's own topic names are
// at most 249).
func AppendOriginValue(b []byte, o Origin, g *Gap) []byte {
	return appendOriginValue(b, o, g, nil)
}

// AppendEndValue appends the HeaderOrigin value of end's marker (see
// EndMarker) to b, stamped at.
func AppendEndValue(b []byte, end StreamEnd, at time.Time) []byte {
	return appendOriginValue(b, Origin{Time: at}, nil, &end)
}

// appendOriginValue is AppendOriginValue, or, with an end e (and no
// gap), that of e's marker (e.LastSeq is its seq, o.Seq is ignored).
func appendOriginValue(b []byte, o Origin, g *Gap, e *StreamEnd) []byte {
	flags := byte(0)
	s, seq := o.Stream, o.Seq
	switch {
	case g != nil:
		flags |= originFlagGap
		s, seq = g.Stream, g.From
	case e != nil:
		flags |= originFlagEnd
		s, seq = e.Stream, e.LastSeq
	}
	if s.Topic != "" {
		flags |= originFlagLog
	}
	b = append(b, OriginVersion, flags)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Time.UnixNano()))
	if s.Topic != "" {
		b = binary.BigEndian.AppendUint32(b, uint32(max(s.Partition, 0)))
		b = appendOriginText(b, s.Topic)
	} else {
		b = binary.BigEndian.AppendUint32(b, s.Feed)
		b = binary.BigEndian.AppendUint64(b, s.Session)
	}
	if g != nil {
		b = binary.BigEndian.AppendUint64(b, g.To)
		b = append(b, byte(g.Reason))
	} else if e != nil {
		b = append(b, byte(e.Reason))
	}
	return appendOriginText(b, o.Topic)
}

func appendOriginText(b []byte, s string) []byte {
	s = s[:min(len(s), maxOriginText)]
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}
