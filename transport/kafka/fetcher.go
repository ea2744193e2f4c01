package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// logMaxWait is how long a broker holds a fetch of a Log that finds
// nothing new before it answers (Fetch's max wait), and how long a Log
// waits before it asks again after an error that asking again may cure.
const logMaxWait = 100 * time.Millisecond

// fetched is the answer to one Fetch request of a Log for one partition
// at one offset.
type fetched struct {
	data    []byte // the partition's record batches
	aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	end     int64         // the last stable offset (read_committed), else the high watermark
	err     error         // a request or partition error
	took    time.Duration // from the request's sending to its answer
}

// inFlight is a Fetch request a Log issued and has not taken the answer
// of yet: the next read's, issued as soon as the one before was
// answered, so that the broker and the network work while the records
// before are decoded and handed on.
type inFlight struct {
	part   int32
	offset int64
	bytes  int32
	done   chan fetched // buffered: the request's goroutine never waits
}

// leader is where a partition is read: its leader's broker ID and its
// topic's ID (for Fetch from version 13, which names topics by ID).
type leader struct {
	broker  int32
	topicID [16]byte
}

// issue sends a Fetch request for partition p from offset off, of at
// most bytes, in the background.
func (l *Log) issue(p int32, off int64, bytes int32) *inFlight {
	f := &inFlight{part: p, offset: off, bytes: bytes, done: make(chan fetched, 1)}
	go func() {
		ctx, cancel := context.WithCancel(l.bg)
		start := time.Now()
		r := l.send(ctx, p, off, bytes)
		r.took = time.Since(start)
		cancel()
		f.done <- r
	}()
	return f
}

// take returns the answer of a Fetch request for partition p from
// offset off: that of the request in flight when it is the one, else of
// one issued now. The request in flight stays so when ctx ends first.
func (l *Log) take(ctx context.Context, p int32, off int64, bytes int32) (fetched, error) {
	if f := l.ahead; f == nil || f.part != p || f.offset != off || f.bytes != bytes {
		l.ahead = l.issue(p, off, bytes)
	}
	select {
	case r := <-l.ahead.done:
		l.ahead = nil
		return r, nil
	case <-ctx.Done():
		return fetched{}, ctx.Err()
	}
}

// drop gives up the request in flight, if there is one. It is not
// cancelled: kgo would close the connection to cancel a request whose
// answer it is reading; its answer is left to the garbage collector.
func (l *Log) drop() { l.ahead = nil }

// request sends one Fetch request for partition p from offset off to the
// partition's leader (read_committed, no fetch session), and returns
// what the partition's answer held.
func (l *Log) request(ctx context.Context, p int32, off int64, bytes int32) fetched {
	ld, err := l.leaderOf(ctx, p)
	if err != nil {
		return fetched{err: err}
	}
	resp, err := l.cl.Broker(int(ld.broker)).RetriableRequest(ctx, fetchRequest(l.topic, ld, p, off, bytes))
	if err != nil {
		return fetched{err: err}
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		return fetched{err: err}
	}
	for i := range fr.Topics {
		for j := range fr.Topics[i].Partitions {
			rp := &fr.Topics[i].Partitions[j]
			if rp.Partition != p {
				continue
			}
			end := rp.HighWatermark
			if rp.LastStableOffset >= 0 {
				end = rp.LastStableOffset
			}
			return fetched{data: rp.RecordBatches, aborted: rp.AbortedTransactions, end: end, err: kerr.ErrorForCode(rp.ErrorCode)}
		}
	}
	return fetched{err: fmt.Errorf("the broker's answer lacks partition %d", p)}
}

// logIsolation is the isolation level a Log fetches at, read_committed,
// whatever its client's options say: it decodes batches itself and
// skips aborted transactions by their producer ids (see package doc,
// Transactions). Its fetches return nothing at or past the last stable
// offset, which is therefore where Bounds ends a partition.
const logIsolation int8 = 1

// fetchRequest is the Fetch request of partition p of topic, led by ld,
// from offset off, of at most bytes. Without the topic's ID (a broker
// whose metadata has none), it is kept to version 12, which names the
// topic, as kgo's consumer does: kgo sends the highest version both
// sides speak, and from 13 on a request names the topic by ID only.
func fetchRequest(topic string, ld leader, p int32, off int64, bytes int32) kmsg.Request {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(logMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = bytes
	req.IsolationLevel = logIsolation
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, ld.topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, bytes
	rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.LastFetchedEpoch = -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if ld.topicID == ([16]byte{}) {
		return fetchByName{req}
	}
	return req
}

// fetchByName is a Fetch request of a version that names topics (12 at
// most).
type fetchByName struct{ *kmsg.FetchRequest }

func (fetchByName) MaxVersion() int16 { return 12 }

// Timeout is the broker's wait, which kgo adds to its read timeout (as
// for a *kmsg.FetchRequest).
func (r fetchByName) Timeout() int32 { return r.MaxWaitMillis }

// leaderOf returns partition p's leader, asking for the topic's metadata
// when it is not known.
func (l *Log) leaderOf(ctx context.Context, p int32) (leader, error) {
	l.lmu.Lock()
	ld, ok := l.leaders[p]
	l.lmu.Unlock()
	if ok {
		return ld, nil
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(l.topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, l.cl)
	if err != nil {
		return leader{}, err
	}
	found := map[int32]leader{}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != l.topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return leader{}, err
		}
		for _, tp := range t.Partitions {
			if tp.ErrorCode == 0 && tp.Leader >= 0 {
				found[tp.Partition] = leader{broker: tp.Leader, topicID: t.TopicID}
			}
		}
	}
	l.lmu.Lock()
	l.leaders = found
	l.lmu.Unlock()
	if ld, ok = found[p]; !ok {
		return leader{}, kerr.LeaderNotAvailable
	}
	return ld, nil
}

// forget drops what is known of the partitions' leaders: an error the
// broker answered says it may have changed.
func (l *Log) forget() {
	l.lmu.Lock()
	l.leaders = nil
	l.lmu.Unlock()
}

// fetchErr is a fetch's error as a Log reports it.
func (l *Log) fetchErr(p int32, err error) error {
	return fmt.Errorf("kafka transport: fetch %s/%d: %w", l.topic, p, err)
}

// recover handles the error of a fetch of partition p from *off: nil
// to fetch again (from *off, which it may move), else the error to
// report. An offset the log no longer holds moves to the log's start,
// one past its end waits for records there; errors that asking again
// may cure (a leader that moved, a broker that went away) are asked
// again, after a pause, until ctx ends.
func (l *Log) recover(ctx context.Context, p int32, off *int64, err error) error {
	var ke *kerr.Error
	switch {
	case errors.Is(err, kgo.ErrClientClosed), l.bg.Err() != nil:
		return transport.ErrClosed
	case errors.Is(err, kerr.OffsetOutOfRange):
		starts, lerr := listOffsets(ctx, l.cl, l.topic, []int32{p}, -2)
		if lerr != nil {
			return lerr
		}
		if start := starts[p]; *off < start {
			*off = start // deleted: the log starts later
			return nil
		}
	case !errors.As(err, &ke) || ke.Retriable || errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID):
		l.forget()
	default:
		return l.fetchErr(p, err)
	}
	if !pause(ctx, logMaxWait) {
		return l.fetchErr(p, err)
	}
	return nil
}

// pause waits d, or until ctx ends (false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
