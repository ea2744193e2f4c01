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

// produce appends each partition's record batches. acks=-1 (all) is
// answered only once the batches are durable under the store's fsync
// policy (group commit: concurrent producers share fsyncs); acks=1 once
// written; acks=0 gets no response at all, as in Kafka.
func (s *Server) produce(req *kmsg.ProduceRequest) kmsg.Response {
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
	type pending struct {
		log    *storage.Log
		last   int64
		ti, pi int // where its answer is in resp
	}
	var waits []pending
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
			var last int64
			if err == nil {
				rp.BaseOffset, last, err = s.appendBatches(log, p.Records)
				rp.LogStartOffset = log.StartOffset()
			}
			rp.ErrorCode = errorCode(err)
			if err != nil {
				s.metrics.produceErrors.Add(1)
				msg := err.Error()
				rp.ErrorMessage = &msg
			}
			rt.Partitions = append(rt.Partitions, rp)
			if err == nil && req.Acks == -1 {
				waits = append(waits, pending{log, last, len(resp.Topics), len(rt.Partitions) - 1})
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(max(req.TimeoutMillis, 1))*time.Millisecond)
	defer cancel()
	for _, w := range waits {
		if err := w.log.WaitDurable(ctx, w.last); err != nil {
			p := &resp.Topics[w.ti].Partitions[w.pi]
			p.ErrorCode = kerr.RequestTimedOut.Code
			if !errors.Is(err, context.DeadlineExceeded) {
				p.ErrorCode = errorCode(err)
			}
		}
	}
	return resp
}

// appendBatches appends every record batch in records (a producer sends
// one per partition, but the format allows several) and returns the
// first batch's base offset and the last offset written.
func (s *Server) appendBatches(log *storage.Log, records []byte) (base, last int64, err error) {
	base = -1
	for len(records) > 0 {
		if len(records) < 12 {
			return base, last, storage.ErrCorruptBatch
		}
		n := 12 + int(binary.BigEndian.Uint32(records[8:12]))
		if n < 12 || n > len(records) {
			return base, last, storage.ErrCorruptBatch
		}
		res, err := log.Append(records[:n])
		if err != nil {
			return base, last, err
		}
		if base < 0 {
			base = res.BaseOffset
		}
		last = res.LastOffset
		s.metrics.producedBytes.Add(uint64(n))
		records = records[n:]
	}
	if base < 0 {
		return base, last, storage.ErrCorruptBatch
	}
	return base, last, nil
}

func produceError(partition int32, code int16) kmsg.ProduceResponseTopicPartition {
	p := kmsg.NewProduceResponseTopicPartition()
	p.Partition, p.ErrorCode, p.BaseOffset, p.LogAppendTime = partition, code, -1, -1
	return p
}
