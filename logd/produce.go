package logd

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// produce appends each partition's record batch (one per partition, as
// Kafka requires). acks=-1 (all) is
// answered only once the batches are durable under the store's fsync
// policy (group commit: concurrent producers share fsyncs): produce
// leaves that wait in cl.durable, for the connection's writer, bounded
// by the request's timeout (at most IdleTimeout, see clientWait) and
// ended early when the client leaves; acks=1
// is answered once written; acks=0 gets no response at all, as in Kafka,
// and when a partition of it fails the connection is closed, as by Kafka,
// so that the producer notices.
func (s *Server) produce(cl *client, req *kmsg.ProduceRequest) kmsg.Response {
	resp := kmsg.NewPtrProduceResponse()
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, produceError(p.Partition, kerr.InvalidRequiredAcks.Code))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	var waits []durablePartition
	failed := 0
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		if _, err := s.partitions(t.Topic); errors.Is(err, storage.ErrUnknownTopicOrPartition) && !s.cfg.DisableAutoCreateTopics {
			_ = s.autoCreate(t.Topic)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LogAppendTime = -1
			log, err := s.store.Partition(t.Topic, p.Partition)
			var res storage.AppendResult
			if err == nil {
				res, err = s.appendBatch(log, p.Records)
				rp.BaseOffset, rp.LogStartOffset = res.BaseOffset, log.StartOffset()
			}
			rp.ErrorCode = errorCode(err)
			if err != nil {
				s.metrics.produceErrors.Add(1)
				failed++
				msg := err.Error()
				rp.ErrorMessage = &msg
				rp.ErrorRecords = recordErrors(err)
			}
			rt.Partitions = append(rt.Partitions, rp)
			if err == nil && req.Acks == -1 {
				waits = append(waits, durablePartition{log, res, len(resp.Topics), len(rt.Partitions) - 1})
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		if failed > 0 {
			// No answer can say so: as Kafka does, the connection is
			// closed, so that the producer notices.
			s.metrics.acksZeroHangUps.Add(1)
			s.warn(&s.warnings.acksZeroFailed, "logd: closing connection: an acks=0 produce failed", "client", cl.id, "host", cl.host, "partitions", failed)
			cl.hangUp = true
		}
		return nil
	}
	if len(waits) > 0 {
		timeout := s.clientWait(max(req.TimeoutMillis, 1))
		cl.durable = &durableWait{resp: resp, waits: waits, deadline: time.Now().Add(timeout)}
	}
	return resp
}

// durableWait is what an acks=all produce waits for before it is
// answered: each partition's last appended offset to be durable, by
// the request's deadline.
type durableWait struct {
	resp     *kmsg.ProduceResponse
	waits    []durablePartition
	deadline time.Time
}

// durablePartition is one partition's part of a durableWait.
type durablePartition struct {
	log    *storage.Log
	res    storage.AppendResult // its append, waited for with WaitAppended
	ti, pi int                  // where its answer is in resp
}

// finish waits for every partition and writes a partition's error into
// resp where its batches did not become durable in time (or its log
// failed, or was reloaded since the append: the wait may begin long
// after it, behind an earlier answer the connection is still writing or
// another partition's wait, and a reload may have cut the batch). It reports whether ctx ended the wait: the connection's
// context, ended when the client closes it or the server closes.
func (w *durableWait) finish(ctx context.Context) (cancelled bool) {
	wctx, cancel := context.WithDeadline(ctx, w.deadline)
	defer cancel()
	for _, d := range w.waits {
		if err := d.log.WaitAppended(wctx, d.res); err != nil {
			p := &w.resp.Topics[d.ti].Partitions[d.pi]
			p.ErrorCode = kerr.RequestTimedOut.Code
			if !errors.Is(err, context.DeadlineExceeded) {
				p.ErrorCode = errorCode(err)
			}
			cancelled = cancelled || ctx.Err() != nil
		}
	}
	return cancelled
}

// errNotOneBatch refuses a partition's records that are not exactly one
// batch: Kafka allows one RecordBatch v2 per partition in a Produce
// (v3 and later; ProduceRequest.validateRecords, INVALID_RECORD), so a
// request is never answered with an error after some of its batches
// were appended.
var errNotOneBatch = &storage.BatchError{Kind: storage.ErrInvalidBatch, Reason: "a produce carries exactly one record batch per partition"}

// appendBatch appends a partition's records, one record batch; on an
// error the result's BaseOffset is -1.
func (s *Server) appendBatch(log *storage.Log, records []byte) (storage.AppendResult, error) {
	failed := storage.AppendResult{BaseOffset: -1}
	if len(records) < 12 {
		return failed, storage.ErrCorruptBatch
	}
	n := 12 + int64(int32(binary.BigEndian.Uint32(records[8:12])))
	switch {
	case n < 12 || n > int64(len(records)):
		return failed, storage.ErrCorruptBatch
	case n < int64(len(records)):
		return failed, errNotOneBatch
	}
	res, err := log.Append(records)
	if err != nil {
		return failed, err
	}
	s.metrics.producedBytes.Add(uint64(n))
	return res, nil
}

func produceError(partition int32, code int16) kmsg.ProduceResponseTopicPartition {
	p := kmsg.NewProduceResponseTopicPartition()
	p.Partition, p.ErrorCode, p.BaseOffset, p.LogAppendTime = partition, code, -1, -1
	return p
}

// recordErrors names the records a *storage.RecordsError refused, as
// Kafka's Produce v8+ record errors do. The reason goes with the first
// only (the partition's error message says it too), so that a batch of
// many refused records is not answered with as many copies of it.
func recordErrors(err error) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	var re *storage.RecordsError
	if !errors.As(err, &re) {
		return nil
	}
	out := make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(re.Records))
	for i, index := range re.Records {
		out[i] = kmsg.NewProduceResponseTopicPartitionErrorRecord()
		out[i].RelativeOffset = index
	}
	out[0].ErrorMessage = &re.Reason
	return out
}
