package logd

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// HTTPHandler serves /healthz (200 "ok" while the server can serve every
// client; 503 and the reasons, one a line, while it refuses connections,
// starves requests of memory, has a fenced partition, or is closed) and
// /metrics (Prometheus text exposition).
func (s *Server) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if why := s.notReady(); len(why) > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "not ready: "+strings.Join(why, "\nnot ready: ")+"\n")
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.writeMetrics(w)
	})
	return mux
}

// writeMetrics renders every metric in the Prometheus text format.
func (s *Server) writeMetrics(w io.Writer) {
	m := s.metrics
	p := promWriter{w: w}
	p.family("logd_connections", "gauge", "Open client connections.")
	p.sample("logd_connections", nil, float64(m.connections.Load()))
	p.family("logd_connections_refused_total", "counter", "Connections refused: MaxConnections or MaxConnectionsPerIP reached.")
	p.sample("logd_connections_refused_total", []string{"reason", "max_connections"}, float64(m.refused.Load()))
	p.sample("logd_connections_refused_total", []string{"reason", "max_connections_per_ip"}, float64(m.refusedPerIP.Load()))
	p.counter("logd_accept_errors_total", "Accepts that failed for want of file descriptors or memory (retried with backoff).", m.acceptErrors.Load())
	p.counter("logd_connections_idle_closed_total", "Connections closed after IdleTimeout without a request.", m.idleClosed.Load())
	p.counter("logd_bad_requests_total", "Connections closed for a bad request: size out of bounds, undecodable, unknown API key or version.", m.badFrames.Load())
	p.counter("logd_clients_gone_while_waiting_total", "Connections whose client closed them while a JoinGroup, SyncGroup, Fetch long-poll or acks=all Produce waited; the wait was abandoned at once.", m.peerGone.Load())
	p.counter("logd_slow_requests_total", "Connections closed because a request, or a new connection's first request, did not arrive whole within RequestTimeout (waits for request memory included).", m.slowRequests.Load())
	mem := s.reqMem.stats()
	p.family("logd_request_memory_bytes", "gauge", "Request memory held by connections' frames.")
	p.sample("logd_request_memory_bytes", nil, float64(mem.used))
	p.family("logd_request_memory_limit_bytes", "gauge", "Bound of request memory (MaxInFlightRequestBytes).")
	p.sample("logd_request_memory_limit_bytes", nil, float64(mem.limit))
	p.family("logd_request_memory_waiting", "gauge", "Connections waiting for request memory.")
	p.sample("logd_request_memory_waiting", nil, float64(mem.waiting))
	p.counter("logd_request_memory_waits_total", "Times a connection had to wait for request memory.", mem.waits)
	p.counter("logd_request_memory_timeouts_total", "Waits for request memory that ended at the request deadline.", mem.expired)
	dec := s.decodeMem.stats()
	p.family("logd_request_decode_memory_bytes", "gauge", "Request memory charged for decoding and answering requests (decodeCharge), a budget of MaxInFlightRequestBytes of its own.")
	p.sample("logd_request_decode_memory_bytes", nil, float64(dec.used))
	p.family("logd_request_decode_memory_waiting", "gauge", "Requests waiting for their decoding's charge.")
	p.sample("logd_request_decode_memory_waiting", nil, float64(dec.waiting))
	p.counter("logd_request_decode_memory_timeouts_total", "Waits for a decoding's charge that ended at the request deadline.", dec.expired)
	p.counter("logd_produce_errors_total", "Partitions of produce requests answered with an error.", m.produceErrors.Load())
	p.counter("logd_produced_bytes_total", "Record batch bytes appended.", m.producedBytes.Load())
	p.counter("logd_fetched_bytes_total", "Record batch bytes served to fetchers.", m.fetchedBytes.Load())
	p.counter("logd_fetch_zero_copy_bytes_total", "Of the record batch bytes served, those sent from the segment files without a copy (sendfile).", m.fetchZeroCopy.Load())
	p.counter("logd_produce_acks0_closed_total", "Connections closed because an acks=0 produce, which gets no answer, failed (as Kafka does).", m.acksZeroHangUps.Load())
	p.counter("logd_fetch_out_of_range_total", "Fetches for offsets outside the log.", m.fetchOutOfRange.Load())
	p.counter("logd_fetch_repeated_partitions_total", "Partitions named again in the same Fetch, answered once.", m.fetchRepeated.Load())
	p.counter("logd_fetch_files_refused_total", "Record sets copied instead of sent from the segment file, their connection (16) or the server (MaxFetchFiles) holding too many descriptors for unwritten answers.", m.fetchFilesRefused.Load())
	p.counter("logd_fetch_copied_cut_total", "Partition reads of Fetches shortened or left out because the answers of all connections held MaxCopiedFetchBytes of record bytes read into memory, unwritten.", m.fetchCopiedCut.Load())
	p.family("logd_fetch_copied_bytes", "gauge", "Record bytes read into memory for Fetch answers not yet written.")
	p.sample("logd_fetch_copied_bytes", nil, float64(s.copied.used.Load()))
	p.family("logd_fetch_copied_limit_bytes", "gauge", "Bound of the record bytes Fetch answers hold in memory (MaxCopiedFetchBytes).")
	p.sample("logd_fetch_copied_limit_bytes", nil, float64(s.copied.limit))
	p.counter("logd_requests_held_for_unwritten_answers_total", "Requests not handled until the earlier answers of their connection, 1 MiB or more, were written: a client not reading its answers.", m.unwrittenWaits.Load())
	p.counter("logd_log_truncations_total", "Torn or corrupt log tails cut by recovery.", m.truncations.Load())
	p.counter("logd_topics_refused_total", "Topic creations refused: MaxTopics reached.", m.topicsRefused.Load())
	p.counter("logd_group_offsets_expired_total", "Consumer groups whose committed offsets were deleted after Storage.OffsetsRetention without a commit and without members.", m.offsetsExpired.Load())
	p.counter("logd_group_offsets_refused_total", "Offset commits of a new consumer group refused (POLICY_VIOLATION): Storage.MaxGroups groups hold offsets and none has expired.", m.groupsRefused.Load())
	p.counter("logd_group_offsets_over_budget_total", "Offset commits refused (INVALID_COMMIT_OFFSET_SIZE): they would take the committed offsets past Storage.MaxOffsetBytes and none has expired.", m.offsetsOverBudget.Load())
	p.family("logd_group_offsets_bytes", "gauge", "Bytes the committed offsets of all consumer groups are accounted at (bounded by Storage.MaxOffsetBytes).")
	p.sample("logd_group_offsets_bytes", nil, float64(s.store.Offsets().Bytes()))
	p.family("logd_group_offsets_limit_bytes", "gauge", "Bound of the committed offsets' bytes (Storage.MaxOffsetBytes).")
	p.sample("logd_group_offsets_limit_bytes", nil, float64(s.cfg.Storage.MaxOffsetBytes))

	m.mu.Lock()
	keys := make([]int16, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	p.family("logd_requests_total", "counter", "Requests answered, by API.")
	for _, k := range keys {
		p.sample("logd_requests_total", []string{"api", kmsg.NameForKey(k)}, float64(m.requests[k].count))
	}
	p.family("logd_request_errors_total", "counter", "Requests that closed their connection, by API.")
	for _, k := range keys {
		p.sample("logd_request_errors_total", []string{"api", kmsg.NameForKey(k)}, float64(m.requests[k].errors))
	}
	p.family("logd_request_seconds_total", "counter", "Time spent answering requests, by API.")
	for _, k := range keys {
		p.sample("logd_request_seconds_total", []string{"api", kmsg.NameForKey(k)}, m.requests[k].seconds)
	}
	p.family("logd_fsync_seconds", "histogram", "Latency of segment fsyncs.")
	var cum uint64
	for i, le := range fsyncBuckets {
		cum += m.fsync.counts[i]
		p.sample("logd_fsync_seconds_bucket", []string{"le", strconv.FormatFloat(le, 'g', -1, 64)}, float64(cum))
	}
	p.sample("logd_fsync_seconds_bucket", []string{"le", "+Inf"}, float64(m.fsync.count))
	p.sample("logd_fsync_seconds_sum", nil, m.fsync.sum)
	p.sample("logd_fsync_seconds_count", nil, float64(m.fsync.count))
	m.mu.Unlock()

	s.writeAuthMetrics(&p)
	s.writePartitionMetrics(&p)
	s.writeGroupMetrics(&p)
	s.writeCoordinatorMetrics(&p)
	s.writeKafkaExporterMetrics(&p)
}

// labelEscaper escapes a label value as the text format requires.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// promWriter writes the Prometheus text format.
type promWriter struct{ w io.Writer }

func (p *promWriter) family(name, typ, help string) {
	fmt.Fprintf(p.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (p *promWriter) counter(name, help string, v uint64) {
	p.family(name, "counter", help)
	p.sample(name, nil, float64(v))
}

// sample writes one sample; labels are name/value pairs.
func (p *promWriter) sample(name string, labels []string, v float64) {
	io.WriteString(p.w, name)
	if len(labels) > 0 {
		io.WriteString(p.w, "{")
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				io.WriteString(p.w, ",")
			}
			fmt.Fprintf(p.w, "%s=\"%s\"", labels[i], labelEscaper.Replace(labels[i+1]))
		}
		io.WriteString(p.w, "}")
	}
	fmt.Fprintf(p.w, " %s\n", strconv.FormatFloat(v, 'g', -1, 64))
}

// writePartitionMetrics reports every partition's log start and end
// offsets and size.
func (s *Server) writePartitionMetrics(p *promWriter) {
	type part struct {
		topic     string
		partition int32
		start     int64
		end       int64
		size      int64
	}
	var parts []part
	for _, t := range s.store.Topics() {
		for i := 0; i < t.Partitions; i++ {
			log, err := s.store.Partition(t.Name, int32(i))
			if err != nil {
				continue
			}
			parts = append(parts, part{t.Name, int32(i), log.StartOffset(), log.EndOffset(), log.Size()})
		}
	}
	series := []struct {
		name, help string
		v          func(part) int64
	}{
		{"logd_partition_log_start_offset", "First offset still in the log.", func(x part) int64 { return x.start }},
		{"logd_partition_log_end_offset", "Offset the next record will take.", func(x part) int64 { return x.end }},
		{"logd_partition_size_bytes", "Bytes of the partition's segments.", func(x part) int64 { return x.size }},
	}
	for _, se := range series {
		p.family(se.name, "gauge", se.help)
		for _, x := range parts {
			p.sample(se.name, []string{"topic", x.topic, "partition", strconv.Itoa(int(x.partition))}, float64(se.v(x)))
		}
	}
}

// writeGroupMetrics reports every group's committed offsets and its lag
// behind each partition's end.
func (s *Server) writeGroupMetrics(p *promWriter) {
	infos := s.groups.Groups()
	p.family("logd_group_committed_offset", "gauge", "Offset a consumer group committed.")
	for _, g := range infos {
		for _, c := range g.Committed {
			p.sample("logd_group_committed_offset", []string{"group", g.Group, "topic", c.Topic, "partition", strconv.Itoa(int(c.Partition))}, float64(c.Offset))
		}
	}
	p.family("logd_group_lag", "gauge", "Records between a group's committed offset and the partition's end.")
	for _, g := range infos {
		for _, c := range g.Committed {
			log, err := s.store.Partition(c.Topic, c.Partition)
			if err != nil {
				continue
			}
			p.sample("logd_group_lag", []string{"group", g.Group, "topic", c.Topic, "partition", strconv.Itoa(int(c.Partition))}, float64(max(log.EndOffset()-c.Offset, 0)))
		}
	}
}
