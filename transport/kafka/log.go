package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// OpenLog makes a logd:// or kafka:// endpoint a transport.LogReader.
func (e endpoint) OpenLog(ctx context.Context) (transport.Log, error) {
	return OpenLog(ctx, e.cfg)
}

var _ transport.LogReader = endpoint{}

// Log reads the partitions of cfg.Topic (or of cfg.Partitions) at any
// offset: a transport.Log. One client consumes one partition at a time,
// from where the last Read ended; a Read elsewhere moves it
// (kgo.Client.SetOffsets, which drops what was fetched ahead).
type Log struct {
	cl    *kgo.Client
	topic string
	parts []int32 // cfg.Partitions; empty: every partition

	// consuming is the partition the client consumes (-1: none), and
	// next the offset the next record read from it has.
	consuming int32
	next      int64
	// hdrs is ReadEach's headers, reused record after record.
	hdrs []transport.Header
}

var _ transport.Log = (*Log)(nil)

// DefaultLogFetchBytes is Config.LogFetchBytes by default: Kafka's own
// per-partition default (max.partition.fetch.bytes), which a Log, that
// reads one partition at a time, makes its whole fetch.
const DefaultLogFetchBytes = 1 << 20

// OpenLog connects a Log. cfg.Group must be empty: a Log reads at
// positions it is given, not at a group's.
func OpenLog(ctx context.Context, cfg Config) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Group != "" {
		return nil, &ConfigError{"Group", cfg.Group, "a log is read at positions, not as a member of a group"}
	}
	fetch := cfg.LogFetchBytes
	if fetch == 0 {
		fetch = DefaultLogFetchBytes
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.FetchMaxBytes(fetch),
		kgo.FetchMaxPartitionBytes(fetch),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, cfg.Options...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	return &Log{cl: cl, topic: cfg.Topic, parts: cfg.Partitions, consuming: -1}, nil
}

// Streams lists the topic's partitions (those of cfg.Partitions only,
// when it names some); none when the topic does not exist.
func (l *Log) Streams(ctx context.Context) ([]transport.StreamID, error) {
	parts := l.parts
	if len(parts) == 0 {
		var err error
		if parts, err = partitions(ctx, l.cl, l.topic); err != nil {
			return nil, err
		}
	}
	ids := make([]transport.StreamID, len(parts))
	for i, p := range parts {
		ids[i] = transport.StreamID{Topic: l.topic, Partition: p}
	}
	return ids, nil
}

// Bounds returns the partition's log start and end offsets.
func (l *Log) Bounds(ctx context.Context, stream transport.StreamID) (first, next uint64, err error) {
	if err := l.check(stream); err != nil {
		return 0, 0, err
	}
	starts, err := listOffsets(ctx, l.cl, l.topic, []int32{stream.Partition}, -2)
	if err != nil {
		return 0, 0, err
	}
	ends, err := listOffsets(ctx, l.cl, l.topic, []int32{stream.Partition}, -1)
	if err != nil {
		return 0, 0, err
	}
	return uint64(max(starts[stream.Partition], 0)), uint64(max(ends[stream.Partition], 0)), nil
}

// PositionAt asks the broker (ListOffsets by timestamp) for the first
// offset stamped at or after t.
func (l *Log) PositionAt(ctx context.Context, stream transport.StreamID, t time.Time) (uint64, error) {
	if err := l.check(stream); err != nil {
		return 0, err
	}
	offs, err := listOffsets(ctx, l.cl, l.topic, []int32{stream.Partition}, t.UnixMilli())
	if err != nil {
		return 0, err
	}
	if off := offs[stream.Partition]; off >= 0 {
		return uint64(off), nil
	}
	_, next, err := l.Bounds(ctx, stream)
	return next, err
}

// Read returns the records of the partition from offset pos on: those
// of one fetch, at least one (see transport.Log), at most
// Config.LogFetchBytes of them but for a first record batch larger.
func (l *Log) Read(ctx context.Context, stream transport.StreamID, pos uint64) ([]transport.Message, error) {
	var out []transport.Message
	var hs []transport.Header
	_, err := l.fetch(ctx, stream, pos, func(fetches kgo.Fetches) {
		// One allocation for the messages and one for their headers, not
		// a growing slice and one per record: a catch-up reads records
		// of a few dozen bytes by the tens of thousands a fetch.
		n, nh := 0, 0
		fetches.EachRecord(func(r *kgo.Record) { n, nh = n+1, nh+len(r.Headers) })
		out = make([]transport.Message, 0, n)
		hs = make([]transport.Header, 0, nh)
	}, func(m *transport.Message, r *kgo.Record) {
		if len(r.Headers) > 0 {
			start := len(hs)
			for _, h := range r.Headers {
				hs = append(hs, transport.Header{Key: h.Key, Value: h.Value})
			}
			m.Headers = hs[start:len(hs):len(hs)]
		}
		out = append(out, *m)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadEach is Read, handing fn each record in turn instead of returning
// them: the message, and its Headers slice, are valid only during the
// call (the next record reuses them); its Key, Payload and header
// values stay valid. It returns how many records fn was given. A
// reader of many small records (the archive's, package
// transport/archive) allocates nothing per record this way.
func (l *Log) ReadEach(ctx context.Context, stream transport.StreamID, pos uint64, fn func(*transport.Message)) (int, error) {
	hs := l.hdrs[:0]
	n, err := l.fetch(ctx, stream, pos, nil, func(m *transport.Message, r *kgo.Record) {
		if len(r.Headers) > 0 {
			hs = hs[:0]
			for _, h := range r.Headers {
				hs = append(hs, transport.Header{Key: h.Key, Value: h.Value})
			}
			m.Headers = hs
		}
		fn(m)
	})
	l.hdrs = hs[:0]
	return n, err
}

// fetch polls the partition from offset pos until a fetch holds at
// least one of its records, then calls each with every such record, as
// a message of stream, in order, after fetched with the whole fetch
// (when not nil). It returns how many records it handed each.
func (l *Log) fetch(ctx context.Context, stream transport.StreamID, pos uint64, fetched func(kgo.Fetches), each func(*transport.Message, *kgo.Record)) (int, error) {
	if err := l.check(stream); err != nil {
		return 0, err
	}
	l.seek(stream.Partition, int64(pos))
	m := new(transport.Message) // one a call, not one a record
	for {
		fetches := l.cl.PollFetches(ctx)
		if fetches.IsClientClosed() {
			return 0, transport.ErrClosed
		}
		if fetched != nil {
			fetched(fetches)
		}
		n := 0
		var ferr error
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err != nil && ferr == nil && !errors.Is(fp.Err, context.Canceled) && !errors.Is(fp.Err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("kafka transport: fetch %s/%d: %w", fp.Topic, fp.Partition, fp.Err)
			}
			if fp.Topic != l.topic || fp.Partition != l.consuming {
				return
			}
			for _, r := range fp.Records {
				if r.Offset < l.next || r.Attrs.IsControl() {
					continue
				}
				l.next = r.Offset + 1
				*m = transport.Message{
					Stream: stream, Seq: uint64(r.Offset), Time: r.Timestamp, Topic: r.Topic, Key: r.Key, Payload: r.Value,
				}
				each(m, r)
				n++
			}
		})
		switch {
		case n > 0:
			return n, nil
		case ferr != nil:
			return 0, ferr
		case ctx.Err() != nil:
			return 0, ctx.Err()
		}
	}
}

// seek makes the client consume partition p from offset off, unless
// it does already.
func (l *Log) seek(p int32, off int64) {
	switch {
	case l.consuming == p && l.next == off:
		return
	case l.consuming == p:
		l.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{l.topic: {p: {Epoch: -1, Offset: off}}})
	default:
		if l.consuming >= 0 {
			l.cl.RemoveConsumePartitions(map[string][]int32{l.topic: {l.consuming}})
		}
		l.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: {p: kgo.NewOffset().At(off)}})
		l.consuming = p
	}
	l.next = off
}

// check refuses a stream that is not a partition of the log's topic.
func (l *Log) check(stream transport.StreamID) error {
	if stream.Topic != l.topic || stream.Partition < 0 {
		return fmt.Errorf("kafka transport: %s is not a partition of the topic %s", stream, l.topic)
	}
	return nil
}

// Close releases the client.
func (l *Log) Close() error {
	l.cl.Close()
	return nil
}
