package logd

import (
	"net"
	"strconv"
)

// writeKafkaExporterMetrics writes, beside logd's own, the series
// kafka_exporter (danielqsj/kafka_exporter) writes for a Kafka cluster,
// with its names, labels and meanings, so that dashboards and alerts
// written against it work unchanged: the broker (one), each topic's
// partitions, each partition's current (end) and oldest offsets, its
// leader and replicas (this node, one, in sync), and each consumer
// group's committed offsets, lag and members. kafka_exporter types its
// _sum series as gauges; they are untyped here, since a gauge ending in
// _sum reads as part of a summary to the text-format linters
// (promtool), and Prometheus stores both alike.
func (s *Server) writeKafkaExporterMetrics(p *promWriter) {
	p.family("kafka_brokers", "gauge", "Number of Brokers in the Kafka Cluster.")
	p.sample("kafka_brokers", nil, 1)
	p.family("kafka_broker_info", "gauge", "Information about the Kafka Broker.")
	// Serve sets the address under s.mu, perhaps while /metrics is read.
	s.mu.Lock()
	host, port := s.host, s.port
	s.mu.Unlock()
	p.sample("kafka_broker_info", []string{"address", net.JoinHostPort(host, strconv.Itoa(int(port))), "id", strconv.Itoa(nodeID)}, 1)

	type part struct {
		topic, partition string
		start, end       int64
	}
	var parts []part
	topics := s.store.Topics()
	p.family("kafka_topic_partitions", "gauge", "Number of partitions for this Topic.")
	for _, t := range topics {
		p.sample("kafka_topic_partitions", []string{"topic", t.Name}, float64(t.Partitions))
		for i := 0; i < t.Partitions; i++ {
			log, err := s.store.Partition(t.Name, int32(i))
			if err != nil {
				continue
			}
			parts = append(parts, part{t.Name, strconv.Itoa(i), log.StartOffset(), log.EndOffset()})
		}
	}
	for _, se := range []struct {
		name, help string
		v          func(part) float64
	}{
		{"kafka_topic_partition_current_offset", "Current Offset of a Broker at Topic/Partition.", func(x part) float64 { return float64(x.end) }},
		{"kafka_topic_partition_oldest_offset", "Oldest Offset of a Broker at Topic/Partition.", func(x part) float64 { return float64(x.start) }},
		{"kafka_topic_partition_leader", "Leader Broker ID of this Topic/Partition.", func(part) float64 { return nodeID }},
		{"kafka_topic_partition_replicas", "Number of Replicas for this Topic/Partition.", func(part) float64 { return 1 }},
		{"kafka_topic_partition_in_sync_replica", "Number of In-Sync Replicas for this Topic/Partition.", func(part) float64 { return 1 }},
		{"kafka_topic_partition_leader_is_preferred", "1 if Topic/Partition is using the Preferred Broker.", func(part) float64 { return 1 }},
		{"kafka_topic_partition_under_replicated_partition", "1 if Topic/Partition is under Replicated.", func(part) float64 { return 0 }},
	} {
		p.family(se.name, "gauge", se.help)
		for _, x := range parts {
			p.sample(se.name, []string{"partition", x.partition, "topic", x.topic}, se.v(x))
		}
	}

	infos := s.groups.Groups()
	type row struct {
		group, topic, partition string
		offset, lag             int64
	}
	var rows []row
	for _, g := range infos {
		for _, c := range g.Committed {
			log, err := s.store.Partition(c.Topic, c.Partition)
			if err != nil {
				continue
			}
			rows = append(rows, row{g.Group, c.Topic, strconv.Itoa(int(c.Partition)), c.Offset, max(log.EndOffset()-c.Offset, 0)})
		}
	}
	perTopic := func(name, typ, help string, v func(row) int64) {
		p.family(name, typ, help)
		for i := 0; i < len(rows); {
			j, sum := i, int64(0)
			for ; j < len(rows) && rows[j].group == rows[i].group && rows[j].topic == rows[i].topic; j++ {
				sum += v(rows[j])
			}
			p.sample(name, []string{"consumergroup", rows[i].group, "topic", rows[i].topic}, float64(sum))
			i = j
		}
	}
	p.family("kafka_consumergroup_current_offset", "gauge", "Current Offset of a ConsumerGroup at Topic/Partition.")
	for _, r := range rows {
		p.sample("kafka_consumergroup_current_offset", []string{"consumergroup", r.group, "partition", r.partition, "topic", r.topic}, float64(r.offset))
	}
	perTopic("kafka_consumergroup_current_offset_sum", "untyped", "Current Offset of a ConsumerGroup at Topic for all partitions.", func(r row) int64 { return r.offset })
	p.family("kafka_consumergroup_lag", "gauge", "Current Approximate Lag of a ConsumerGroup at Topic/Partition.")
	for _, r := range rows {
		p.sample("kafka_consumergroup_lag", []string{"consumergroup", r.group, "partition", r.partition, "topic", r.topic}, float64(r.lag))
	}
	perTopic("kafka_consumergroup_lag_sum", "untyped", "Current Approximate Lag of a ConsumerGroup at Topic for all partitions.", func(r row) int64 { return r.lag })
	p.family("kafka_consumergroup_members", "gauge", "Amount of members in a consumer group.")
	for _, g := range infos {
		p.sample("kafka_consumergroup_members", []string{"consumergroup", g.Group}, float64(g.Members))
	}
}
