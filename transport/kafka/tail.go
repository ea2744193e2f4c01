package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// Tail makes a logd:// or kafka:// endpoint a transport.TailReader: the
// records' headers alone (a pipe reads them for their origin headers,
// and n records of 1 MiB would otherwise all be held).
func (e endpoint) Tail(ctx context.Context, n int) ([]transport.Message, error) {
	return tail(ctx, e.cfg, n, true)
}

// Before makes a logd:// or kafka:// endpoint a transport.BackReader.
func (e endpoint) Before(ctx context.Context, stream transport.StreamID, pos uint64, n int) ([]transport.Message, error) {
	return Before(ctx, e.cfg, stream.Partition, pos, n)
}

var (
	_ transport.TailReader = endpoint{}
	_ transport.BackReader = endpoint{}
)

// Before returns the records of partition of cfg.Topic before offset
// pos, at most n, oldest first, as Tail does: a pipe reads further back
// in its destination than the tail it resumed from
// (transport.BackReader), with their headers alone (no key, no
// payload: a pipe reads them for their origin headers, and a page of
// large records would otherwise hold them all): fewer than n only when
// they reach the partition's start (a compacted partition is read
// further back than n offsets, see lastRecords). None when pos is at or
// before the partition's start. A pos past the partition's end reads
// before its end, which depends on the isolation level, as Tail's does.
func Before(ctx context.Context, cfg Config, partition int32, pos uint64, n int) ([]transport.Message, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if n < 1 || pos > math.MaxInt64 {
		return nil, fmt.Errorf("%w: %d records before offset %d", ErrBadConfig, n, pos)
	}
	admin, err := cfg.newClient()
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	defer admin.Close()
	got, err := lastRecords(ctx, cfg, admin, []int32{partition}, int64(pos), n, true)
	if err != nil {
		return nil, err
	}
	return got[partition], nil
}

// Tail returns the last n records of each partition of cfg.Topic
// (fewer only when they reach its start: a compacted partition is read
// further back than its last n offsets, see lastRecords), oldest first
// per partition, as messages: Stream is the
// topic and partition, Seq the offset. A topic that does not exist has
// none. Pipes read their destination's tail to resume (see
// transport.TailReader).
//
// A partition's end is where a consumer at the isolation level of
// cfg.Options (kgo.FetchIsolationLevel) reads up to: at
// read_uncommitted (the default) the high watermark, the records of
// open transactions included; at read_committed the last stable offset,
// so that the tail is the last n committed records before it, as a
// read_committed consumer sees the partition, and a transaction still
// open at the end is not waited for (its records are not returned).
func Tail(ctx context.Context, cfg Config, n int) ([]transport.Message, error) {
	return tail(ctx, cfg, n, false)
}

// tail is Tail, of the records' headers alone with headersOnly.
func tail(ctx context.Context, cfg Config, n int, headersOnly bool) ([]transport.Message, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: tail of %d records", ErrBadConfig, n)
	}
	admin, err := cfg.newClient()
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	defer admin.Close()
	parts, err := partitions(ctx, admin, cfg.Topic)
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	got, err := lastRecords(ctx, cfg, admin, parts, math.MaxInt64, n, headersOnly)
	if err != nil {
		return nil, err
	}
	var out []transport.Message
	for _, p := range parts {
		out = append(out, got[p]...)
	}
	return out, nil
}

// lastRecords returns, for each of parts, its last n records before its
// end, or before offset before when that is lower (at most; fewer only
// when they reach the partition's start), oldest first. The end is
// asked for at the isolation level admin fetches at, which is the one
// readUntil's client fetches at (both are made of cfg, whose Options
// set it): the high watermark at read_uncommitted, the last stable
// offset at read_committed. A read_committed fetch returns nothing at or
// past the last stable offset, so a read up to the high watermark would
// wait for a transaction still open at the end until tailTimeout.
// Compaction may have removed offsets: a stretch of n offsets can hold
// fewer records, and a partition is read further back, each stretch
// twice as long as the last, until it has n or reaches its start. A pipe takes a tail or a page of fewer than it
// asked for as the stream's start (transport.TailReader, BackReader).
func lastRecords(ctx context.Context, cfg Config, admin *kgo.Client, parts []int32, before int64, n int, headersOnly bool) (map[int32][]transport.Message, error) {
	starts, err := listOffsets(ctx, admin, cfg.Topic, parts, -2)
	if err != nil {
		return nil, err
	}
	iso, _ := admin.OptValue(kgo.FetchIsolationLevel).(int8)
	ends, err := listOffsetsAt(ctx, admin, cfg.Topic, parts, -1, iso)
	if err != nil {
		return nil, err
	}
	got := map[int32][]transport.Message{}
	left := map[int32]int64{} // the partitions short of n, and where their next stretch ends
	for p, end := range ends {
		if end = min(end, before); end > starts[p] {
			left[p] = end
		}
	}
	for span := int64(n); len(left) > 0; span = min(2*span, math.MaxInt64/2) {
		from, until := map[int32]kgo.Offset{}, map[int32]int64{}
		for p, end := range left {
			start := max(starts[p], end-span)
			from[p], until[p], left[p] = kgo.NewOffset().At(start), end, start
		}
		recs, err := readUntil(ctx, cfg, from, until, headersOnly)
		if err != nil {
			return nil, err
		}
		byPart := map[int32][]transport.Message{}
		for _, m := range recs {
			byPart[m.Stream.Partition] = append(byPart[m.Stream.Partition], m)
		}
		for p := range from {
			r, have := byPart[p], got[p]
			got[p] = append(r[max(0, len(r)-(n-len(have))):], have...)
			if len(got[p]) >= n || left[p] <= starts[p] {
				delete(left, p)
			}
		}
	}
	return got, nil
}

// partitions lists the partitions of topic; none when it does not exist.
func partitions(ctx context.Context, cl *kgo.Client, topic string) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafka transport: metadata of %s: %w", topic, err)
	}
	var parts []int32
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("kafka transport: metadata of %s: %w", topic, err)
		}
		for _, p := range t.Partitions {
			parts = append(parts, p.Partition)
		}
	}
	return parts, nil
}

// listOffsets returns each partition's end (at -1: the high watermark)
// or start (at -2) offset, at read_uncommitted.
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, parts []int32, at int64) (map[int32]int64, error) {
	return listOffsetsAt(ctx, cl, topic, parts, at, 0)
}

// listOffsetsAt is listOffsets at an isolation level: 0 read_uncommitted,
// 1 read_committed, where a partition's end (at -1) is its last stable
// offset, the first offset of the earliest transaction still open (the
// high watermark when none is).
func listOffsetsAt(ctx context.Context, cl *kgo.Client, topic string, parts []int32, at int64, isolation int8) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, at, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafka transport: offsets of %s: %w", topic, err)
	}
	offsets := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("kafka transport: offsets of %s/%d: %w", topic, p.Partition, err)
			}
			offsets[p.Partition] = p.Offset
		}
	}
	return offsets, nil
}

// tailTimeout bounds how long Tail reads, should a partition's read
// never reach its end (see readUntil).
const tailTimeout = 30 * time.Second

// readUntil reads each partition from its offset in from until its
// offset in ends (a record at or past the offset before it ends the
// partition's read: compaction may have removed that offset).
//
// The client keeps control records: on Kafka, a partition that
// transactional producers write often ends with a transaction marker,
// which kgo would otherwise drop, and a read waiting for a record at the
// last offset would never end. A control record is not returned, but
// its offset ends the partition's read as a record's does; so does one
// of an aborted transaction's markers at read_committed, where the
// aborted records before it are dropped (kgo keeps control records
// of aborted transactions too).
//
// With headersOnly the messages hold their headers alone, copied (no
// key, no payload): what is kept of a page is then a few dozen bytes a
// record, whatever the records' size, and the fetched batches are freed.
func readUntil(ctx context.Context, cfg Config, from map[int32]kgo.Offset, ends map[int32]int64, headersOnly bool) ([]transport.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, tailTimeout)
	defer cancel()
	cl, err := cfg.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: from}), kgo.KeepControlRecords())
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	defer cl.Close()
	byPart := map[int32][]transport.Message{}
	left := len(from)
	for left > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fe := errs[0]
			return nil, fmt.Errorf("kafka transport: reading the last records of %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			end, reading := ends[r.Partition]
			if !reading {
				return
			}
			if r.Offset >= end-1 {
				delete(ends, r.Partition)
				left--
			}
			if r.Offset >= end || r.Attrs.IsControl() {
				return
			}
			m := transport.Message{
				Stream: transport.StreamID{Topic: r.Topic, Partition: r.Partition}, Seq: uint64(r.Offset),
				Time: r.Timestamp, Topic: r.Topic, Key: r.Key, Payload: r.Value,
			}
			for _, h := range r.Headers {
				v := h.Value
				if headersOnly {
					v = slices.Clone(v)
				}
				m.Headers = append(m.Headers, transport.Header{Key: h.Key, Value: v})
			}
			if headersOnly {
				m.Key, m.Payload = nil, nil
			}
			byPart[r.Partition] = append(byPart[r.Partition], m)
		})
	}
	var out []transport.Message
	for p := range from {
		out = append(out, byPart[p]...)
	}
	return out, nil
}
