package storage

import "time"

// Hook is a metrics hook: any value implementing one or more of the
// Hook* interfaces below. Hooks are called synchronously, sometimes with
// a partition's lock held: they must be fast and must not call back into
// the Store.
type Hook any

// HookAppend is told of every batch appended (duplicates excluded).
type HookAppend interface {
	OnAppend(topic string, partition int32, records, bytes int)
}

// HookFsync is told of every fsync of a partition's segment, with how
// long it took and how many bytes it made durable.
type HookFsync interface {
	OnFsync(topic string, partition int32, took time.Duration, bytes int64)
}

// HookTruncate is told when recovery cuts a partition's log at an
// offset because what followed was torn or corrupt.
type HookTruncate interface {
	OnTruncate(topic string, partition int32, offset int64, droppedBytes int64, reason string)
}

// HookSegmentDelete is told of every segment deleted by retention.
type HookSegmentDelete interface {
	OnSegmentDelete(topic string, partition int32, baseOffset int64, bytes int64)
}

// HookCompact is told of every compaction pass that rewrote segments.
type HookCompact interface {
	OnCompact(topic string, partition int32, stats CompactStats)
}

// HookProducerEvict is told when an idempotent producer is forgotten to
// stay within MaxProducers.
type HookProducerEvict interface {
	OnProducerEvict(topic string, partition int32, producerID int64)
}

// HookGroupOffsetsExpire is told of every consumer group whose offsets
// (partitions of them) expired (OffsetStore.Expire). It is called with
// the OffsetStore's lock held.
type HookGroupOffsetsExpire interface {
	OnGroupOffsetsExpire(group string, partitions int)
}

// hooks dispatches to the hooks that implement each event.
type hooks []Hook

func (h hooks) append(topic string, p int32, records, bytes int) {
	for _, x := range h {
		if f, ok := x.(HookAppend); ok {
			f.OnAppend(topic, p, records, bytes)
		}
	}
}

func (h hooks) fsync(topic string, p int32, took time.Duration, bytes int64) {
	for _, x := range h {
		if f, ok := x.(HookFsync); ok {
			f.OnFsync(topic, p, took, bytes)
		}
	}
}

func (h hooks) truncate(topic string, p int32, offset, dropped int64, reason string) {
	for _, x := range h {
		if f, ok := x.(HookTruncate); ok {
			f.OnTruncate(topic, p, offset, dropped, reason)
		}
	}
}

func (h hooks) segmentDelete(topic string, p int32, base, bytes int64) {
	for _, x := range h {
		if f, ok := x.(HookSegmentDelete); ok {
			f.OnSegmentDelete(topic, p, base, bytes)
		}
	}
}

func (h hooks) compact(topic string, p int32, st CompactStats) {
	for _, x := range h {
		if f, ok := x.(HookCompact); ok {
			f.OnCompact(topic, p, st)
		}
	}
}

func (h hooks) producerEvict(topic string, p int32, id int64) {
	for _, x := range h {
		if f, ok := x.(HookProducerEvict); ok {
			f.OnProducerEvict(topic, p, id)
		}
	}
}

func (h hooks) groupOffsetsExpire(group string, partitions int) {
	for _, x := range h {
		if f, ok := x.(HookGroupOffsetsExpire); ok {
			f.OnGroupOffsetsExpire(group, partitions)
		}
	}
}
