package kafka

import (
	"context"
	"fmt"
	"sync"
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
// offset: a transport.Log. It sends its own Fetch requests through a
// kgo client (read_committed, to each partition's leader) and decodes
// the record batches itself (recordbatch.go), handing records in place;
// once a read's answer came, the next read's request, from where it
// ended, is sent before its records are handed on, so that the broker
// works while they are.
type Log struct {
	cl    *kgo.Client
	topic string
	parts []int32 // cfg.Partitions; empty: every partition
	bytes int32   // cfg.LogFetchBytes or its default

	bg    context.Context // the requests' context, ended by Close
	stop  context.CancelFunc
	ahead *inFlight // the request of the next read, if any
	// held is the rest of the last fetch, when a read stopped in it.
	held *heldFetch
	// send is request; a test's fake broker in its place.
	send    func(ctx context.Context, p int32, off int64, bytes int32) fetched
	dec     *batchDecoder
	lmu     sync.Mutex // guards leaders: requests look them up too
	leaders map[int32]leader
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
	cl, err := cfg.newClient(kgo.MaxDecompressBatchBytes(logMaxDecompress))
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	// The client's decompressor: bounded by kgo.MaxDecompressBatchBytes
	// (logMaxDecompress unless cfg.Options says otherwise), or the
	// one kgo.WithDecompressor gave in cfg.Options.
	dec, ok := cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
	if !ok {
		cl.Close()
		return nil, fmt.Errorf("kafka transport: the kgo client has no decompressor")
	}
	bg, stop := context.WithCancel(context.Background())
	l := &Log{cl: cl, topic: cfg.Topic, parts: cfg.Partitions, bytes: fetch, bg: bg, stop: stop, dec: newBatchDecoder(dec)}
	l.send = l.request
	return l, nil
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

// Bounds returns the partition's log start and end offsets. The end is
// the one a Read reaches, asked for at the isolation level the Log
// fetches at (logIsolation, read_committed): the last stable offset,
// the first offset of the earliest transaction still open, or the high
// watermark when none is. The high watermark past an open transaction
// was an end no Read reached: a reader up to it (the archive reader)
// waited for good.
func (l *Log) Bounds(ctx context.Context, stream transport.StreamID) (first, next uint64, err error) {
	if err := l.check(stream); err != nil {
		return 0, 0, err
	}
	starts, err := listOffsets(ctx, l.cl, l.topic, []int32{stream.Partition}, -2)
	if err != nil {
		return 0, 0, err
	}
	ends, err := listOffsetsAt(ctx, l.cl, l.topic, []int32{stream.Partition}, -1, logIsolation)
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
	// At the isolation level of the Log's reads: at read_uncommitted a
	// record of an open transaction could be the answer, an offset past
	// the last stable one that a Read from it never reached.
	offs, err := listOffsetsAt(ctx, l.cl, l.topic, []int32{stream.Partition}, t.UnixMilli(), logIsolation)
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
// Config.LogFetchBytes of them but for a first record batch larger, and
// about logReadRecords of them (the rest of the fetch is kept for the
// next read from there).
func (l *Log) Read(ctx context.Context, stream transport.StreamID, pos uint64) ([]transport.Message, error) {
	var out []transport.Message
	_, err := l.fetch(ctx, stream, pos, func(m *transport.Message) {
		c := *m
		if m.Headers != nil {
			c.Headers = append([]transport.Header(nil), m.Headers...)
		}
		out = append(out, c)
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
	return l.fetch(ctx, stream, pos, fn)
}

// fetch fetches the partition from offset pos until a fetch holds at
// least one of its records, then calls each with every such record, as
// a message of stream, in order. It returns how many records it handed.
func (l *Log) fetch(ctx context.Context, stream transport.StreamID, pos uint64, each func(*transport.Message)) (int, error) {
	if err := l.check(stream); err != nil {
		return 0, err
	}
	if l.bg.Err() != nil {
		return 0, transport.ErrClosed
	}
	p, off, bytes := stream.Partition, int64(pos), l.bytes
	m := &transport.Message{Stream: stream, Topic: l.topic}
	for {
		var f fetched
		if h := l.held; h != nil && h.part == p && h.from <= off && off <= h.next {
			f = h.f // the rest of the fetch the last read stopped in
		} else {
			var err error
			if f, err = l.take(ctx, p, off, bytes); err != nil {
				return 0, err // ctx ended; the request stays in flight
			}
			if f.err != nil {
				if err := l.recover(ctx, p, &off, f.err); err != nil {
					return 0, err
				}
				bytes = l.bytes
				continue
			}
			next, whole, first := scanBatches(f.data)
			switch {
			case whole && next < f.end:
				// The next fetch's request, sent before this one's
				// records are handed on.
				l.ahead = l.issue(p, next, l.bytes)
			case !whole && len(f.data) >= int(bytes) && (first > 0 || len(f.data) <= batchMagicAt):
				// A batch larger than the fetch size, from a broker
				// that cuts it there (brokers since Kafka 0.10.1 send
				// it whole): ask for all of it.
				want := max(first, 2*int(bytes))
				if want > maxBatchBytes {
					return 0, l.fetchErr(p, fmt.Errorf("%w at offset %d: a batch of %d bytes, more than %d", ErrCorruptBatch, off, first, maxBatchBytes))
				}
				bytes = int32(want)
				continue
			}
			l.dec.begin(f.aborted)
		}
		l.held = nil
		n, after, next, rest, err := l.dec.decode(f.data, off, logReadRecords, m, each)
		if err != nil {
			l.drop()
			if n > 0 {
				// The records before what cannot be read are the
				// read's; the read from there on reports it.
				return n, nil
			}
			return 0, l.fetchErr(p, err)
		}
		if _, whole, _ := scanBatches(rest); whole {
			f.data = rest
			l.held = &heldFetch{part: p, from: after, next: next, f: f}
		}
		if n > 0 {
			return n, nil
		}
		if next == off && f.took < logMaxWait && !pause(ctx, logMaxWait-f.took) {
			// Nothing past off, answered before the broker's wait
			// was up: asked again after it, as kgo's consumer backs
			// off a fetch that makes no progress, not in a loop.
			return 0, ctx.Err()
		}
		off = next // past batches of control records or aborted transactions only
		bytes = l.bytes
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// logReadRecords is about the most records one read of a Log hands
// (it stops after the record batch that reaches it): the rest of the
// fetch is kept for the next read from there. A fetch of 1 MiB of small
// compressed records holds tens of thousands; a reader that turns each
// into an event of a few hundred bytes then works on a few hundred KiB
// at a time rather than on many MiB.
const logReadRecords = 1024

// heldFetch is the rest of a fetch of partition part whose decoding a
// read stopped (logReadRecords): the read of any offset from..next
// goes on with it, no record lying between.
type heldFetch struct {
	part       int32
	from, next int64
	f          fetched
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
	l.stop()
	l.cl.Close()
	return nil
}
