package logd

import (
	"errors"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// fetch reads whole record batches from each partition asked for (a
// partition named twice is answered once, as by Kafka),
// bounded by the request's partition and response byte limits (always at
// least one batch, so a batch larger than the limits still gets through),
// and long-polls: while fewer than MinBytes are ready it waits for
// appends, up to MaxWait, unless a partition has an error, which is
// answered at once (as Kafka's ReplicaManager does). MaxWait is capped
// at IdleTimeout (see clientWait). A wait ends early when the client
// closes the connection: the socket is watched while the fetch waits
// (peerWatch), not when it answers at once. Fetch sessions (KIP-227) are not kept: every
// answer is a full one with session id 0, which clients accept.
func (s *Server) fetch(cl *client, req *kmsg.FetchRequest) kmsg.Response {
	// Long-poll timing is real time, whatever clock the store is given.
	deadline := time.Now().Add(s.clientWait(req.MaxWaitMillis))
	if n := foldFetchPartitions(req); n > 0 {
		s.metrics.fetchRepeated.Add(uint64(n))
	}
	// Its place in line for copied bytes, made only when the fetch must
	// wait in line (nil: not in line, as mayTake reads it), so that a
	// fetch that never waits for bytes (sendfile ones, most others)
	// allocates no turn.
	var turn *copyTurn
	defer func() {
		if turn != nil {
			s.copied.leave(turn)
		}
	}()
	for {
		// Take the wake-up channels before reading, so that an advance
		// between the read and the wait is not missed.
		woken := s.updates(req)
		// An earlier pass's copied bytes go back before the count of
		// returns is taken: the poll must not wake itself.
		s.copied.put(cl.copied)
		cl.copied = 0
		returned := s.copied.returned()
		resp, n, failed, cut := s.fetchOnce(cl, req, turn)
		wait := time.Until(deadline)
		if n >= int(req.MinBytes) || n > 0 && req.MinBytes <= 0 || failed || wait <= 0 {
			return resp
		}
		if cut {
			// Record bytes were left out for want of copiedBytes: the
			// fetch waits in line for them, the wait also ending when
			// some come back while it is first.
			if turn == nil {
				turn = new(copyTurn)
			}
			woken = append(woken, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.copied.wait(turn, returned))})
		} else if turn != nil {
			s.copied.leave(turn) // it waits for records, not bytes
		}
		ctx := cl.peer.context() // ends with the server, or when the client leaves
		t := time.NewTimer(wait)
		cases := append(woken, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
		reflect.Select(cases)
		t.Stop()
		if ctx.Err() != nil {
			return resp
		}
	}
}

// clientWait is how long a request may wait for what it asks (a
// Fetch's MaxWait, an acks=all Produce's timeout): the client's
// milliseconds, at most IdleTimeout. Kafka does not bound either, and
// a client may ask for 2^31-1 ms (24 days); no client needs a wait
// longer than the server lets a connection go without traffic, and
// one that asks for it is answered by then (an empty fetch, a produce
// REQUEST_TIMED_OUT), as by a shorter wait.
func (s *Server) clientWait(millis int32) time.Duration {
	return min(time.Duration(max(millis, 0))*time.Millisecond, s.cfg.IdleTimeout)
}

// updates returns, as select cases, the channels closed when the high
// watermark of a partition the request reads advances, and when a topic
// is created (the request may name one that did not exist yet).
func (s *Server) updates(req *kmsg.FetchRequest) []reflect.SelectCase {
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.topicsAdded.wait())}}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if log, err := s.store.Partition(t.Topic, p.Partition); err == nil {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(log.Updated())})
			}
		}
	}
	return cases
}

// fetchOnce builds a fetch response from what is in the logs now, read
// into the connection's buffer, and returns it with the number of record
// bytes it carries, whether a partition has an error and whether record
// bytes were left out for want of copiedBytes (cut). When the connection can send from files
// (cl.zeroCopy), checked record sets are not read: they are left in
// cl.regions for the writer to send from the segment files. Record
// sets read into the buffer (none held: fetch gave back an earlier
// pass's) take their bytes from s.copied, in turn (see copiedBytes): a
// read is limited to what is available, and one that still does not fit
// (its first batch is larger) is left out.
func (s *Server) fetchOnce(cl *client, req *kmsg.FetchRequest, turn *copyTurn) (resp *kmsg.FetchResponse, n int, failed, cut bool) {
	buf := cl.fetch[:0]
	defer func() { cl.fetch = buf }() // its length: what this fetch used
	cl.closeRegions()                 // those of an earlier pass of a long poll
	resp = kmsg.NewPtrFetchResponse()
	// Made at their size: a slice grown by append allocates about 5
	// times its final size, not charged (decodeCharge).
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	budget := s.cfg.MaxFetchBytes
	if req.MaxBytes > 0 {
		budget = min(budget, int(req.MaxBytes))
	}
	total, partitions := 0, 0
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.PreferredReadReplica = -1
			log, err := s.store.Partition(t.Topic, p.Partition)
			if err == nil {
				rp.HighWatermark = log.HighWatermark()
				rp.LastStableOffset = rp.HighWatermark
				rp.LogStartOffset = log.StartOffset()
				limit := min(int(p.PartitionMaxBytes), budget-total)
				if total == 0 {
					limit = max(limit, 1) // the first partition always gets one batch
				}
				if limit > 0 && p.FetchOffset < rp.HighWatermark {
					start := len(buf)
					var r storage.Region
					short := false // the read is cut for want of copied bytes
					if cl.zeroCopy && cl.files.take() {
						buf, r, err = log.ReadRegion(buf, p.FetchOffset, limit)
						if r.File == nil {
							cl.files.put(1)
						}
					} else if copyLimit := int(min(int64(limit), s.copied.available(turn))); copyLimit <= 0 {
						// available (copiedBytes' lock) only when copying:
						// a read sent from the files takes nothing of it.
						short = true
					} else {
						if cl.zeroCopy {
							s.metrics.fetchFilesRefused.Add(1)
						}
						var left int64
						buf, left, err = log.ReadAppendLeft(buf, p.FetchOffset, copyLimit)
						// Cut only when a batch was left out that limit
						// would have taken: a read of all there is (a long
						// poll's, waiting for more records), or to its
						// segment's end (reads never span two), waits for
						// no bytes, and in line for them, first, it kept
						// every fetch behind it from reading until its
						// MaxWait. left < 0: its size was not read.
						short = copyLimit < limit && left != 0 && (left < 0 || int64(len(buf)-start)+left <= int64(limit))
					}
					if read := int64(len(buf) - start); read > 0 {
						if s.copied.take(read, turn) {
							cl.copied += read
						} else {
							buf, short = buf[:start], true
						}
					}
					if short {
						s.metrics.fetchCopiedCut.Add(1)
						cut = true
					}
					if r.File != nil {
						cl.setRegion(partitions, r)
						total += r.Len
					} else if err == nil {
						rp.RecordBatches = buf[start:len(buf):len(buf)]
					}
				} else if p.FetchOffset > log.EndOffset() || p.FetchOffset < rp.LogStartOffset {
					// Between the high watermark and the log end (appended,
					// not yet durable) there is nothing to read yet, and no
					// error: as in Kafka (LocalLog.read), only an offset past
					// the log end or below its start is out of range.
					err = storage.ErrOffsetOutOfRange
				}
			}
			if errors.Is(err, storage.ErrOffsetOutOfRange) {
				s.metrics.fetchOutOfRange.Add(1)
			}
			rp.ErrorCode = errorCode(err)
			failed = failed || err != nil
			if rp.RecordBatches == nil {
				rp.RecordBatches = []byte{} // an empty set, not null: librdkafka rejects size -1
			}
			total += len(rp.RecordBatches)
			rt.Partitions = append(rt.Partitions, rp)
			partitions++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.metrics.fetchedBytes.Add(uint64(total))
	return resp, total, failed, cut
}

// setRegion records r as the record set of the i-th partition of the
// response being built (counting across topics, in order).
func (cl *client) setRegion(i int, r storage.Region) {
	for len(cl.regions) <= i {
		cl.regions = append(cl.regions, storage.Region{})
	}
	cl.regions[i] = r
}

// closeRegions closes the files of cl.regions and forgets them.
func (cl *client) closeRegions() {
	n := 0
	for _, r := range cl.regions {
		if r.File != nil {
			r.File.Close()
			n++
		}
	}
	cl.files.put(n)
	cl.regions = cl.regions[:0]
}
