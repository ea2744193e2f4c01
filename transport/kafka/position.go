package kafka

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Position is where a subscriber starts reading a partition. The zero
// Position is Earliest.
type Position struct {
	kind   positionKind
	offset int64
	time   time.Time
}

type positionKind uint8

const (
	posEarliest positionKind = iota
	posLatest
	posOffset
	posTime
)

// Earliest is the oldest record the partition still holds.
func Earliest() Position { return Position{} }

// Latest is the end of the partition: only records published after the
// subscriber starts.
func Latest() Position { return Position{kind: posLatest} }

// AtOffset is the record at offset off. Offsets the log no longer holds
// (removed by retention) are reported as a Gap before the first record;
// an offset past the end starts at the end.
func AtOffset(off int64) Position { return Position{kind: posOffset, offset: off} }

// AtTime is the first record stamped at or after t (to the millisecond).
func AtTime(t time.Time) Position { return Position{kind: posTime, time: t} }

func (p Position) String() string {
	switch p.kind {
	case posLatest:
		return "latest"
	case posOffset:
		return fmt.Sprintf("offset %d", p.offset)
	case posTime:
		return p.time.Format(time.RFC3339Nano)
	}
	return "earliest"
}

// exact is the offset p names exactly, or -1 when the offset depends on
// the log (earliest, latest, a time).
func (p Position) exact() int64 {
	if p.kind == posOffset {
		return p.offset
	}
	return -1
}

func (p Position) kgo() kgo.Offset {
	switch p.kind {
	case posLatest:
		return kgo.NewOffset().AtEnd()
	case posOffset:
		return kgo.NewOffset().At(p.offset)
	case posTime:
		return kgo.NewOffset().AfterMilli(p.time.UnixMilli())
	}
	return kgo.NewOffset().AtStart()
}
