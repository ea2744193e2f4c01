package groups

import "github.com/twmb/franz-go/pkg/kmsg"

// wantTopic is one topic an OffsetFetch asks about.
type wantTopic struct {
	topic      string
	partitions []int32
}

// topicOffsets is what OffsetFetch answers for one topic.
type topicOffsets struct {
	topic   string
	offsets []Committed
}

// OffsetFetch handles OffsetFetch: one group in versions 1 to 7, several
// in 8 and 9 (member IDs and epochs of the KIP-848 protocol, v9, are
// ignored; topic IDs, v10+, are not supported). A partition without a
// commit gets offset -1; a group's topics left null (v2+) ask for every
// partition it has committed. A partition, or a group, named several
// times is answered once, where first named (Kafka answers every
// mention): each answer carries the commit's metadata, up to
// MaxOffsetMetadata, so a request repeating a 4-byte partition index
// would be answered with a thousand times its size.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		seen := make(map[string]bool, len(req.Groups))
		for _, rg := range req.Groups {
			if seen[rg.Group] {
				continue
			}
			seen[rg.Group] = true
			var want []wantTopic
			if rg.Topics != nil {
				want = make([]wantTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					want = append(want, wantTopic{t.Topic, t.Partitions})
				}
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			if rg.Group == "" {
				g.ErrorCode = codeInvalidGroup
			}
			for _, ct := range c.fetch(rg.Group, want) {
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic = ct.topic
				for _, cp := range ct.offsets {
					p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					p.Partition, p.Offset, p.Metadata = cp.Partition, cp.Offset, kmsg.StringPtr(cp.Metadata)
					t.Partitions = append(t.Partitions, p)
				}
				g.Topics = append(g.Topics, t)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	if req.Group == "" {
		resp.ErrorCode = codeInvalidGroup
		return resp
	}
	var want []wantTopic
	if req.Topics != nil {
		want = make([]wantTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			want = append(want, wantTopic{t.Topic, t.Partitions})
		}
	}
	for _, ct := range c.fetch(req.Group, want) {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = ct.topic
		for _, cp := range ct.offsets {
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.Metadata = cp.Partition, cp.Offset, kmsg.StringPtr(cp.Metadata)
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// fetch reads a group's committed offsets: the topics and partitions
// asked for, in the order asked, each once (offset -1 where nothing is
// committed), or, when want is nil, every committed one.
func (c *Coordinator) fetch(group string, want []wantTopic) []topicOffsets {
	if group == "" {
		return nil
	}
	var out []topicOffsets
	if want == nil {
		for _, cp := range c.cfg.Offsets.All(group) {
			if len(out) == 0 || out[len(out)-1].topic != cp.Topic {
				out = append(out, topicOffsets{topic: cp.Topic})
			}
			last := &out[len(out)-1]
			last.offsets = append(last.offsets, cp)
		}
		return out
	}
	type topicPartition struct {
		topic     string
		partition int32
	}
	seen := make(map[topicPartition]bool)
	for _, w := range want {
		t := topicOffsets{topic: w.topic, offsets: make([]Committed, 0, len(w.partitions))}
		for _, p := range w.partitions {
			if seen[topicPartition{w.topic, p}] {
				continue
			}
			seen[topicPartition{w.topic, p}] = true
			off, meta, ok := c.cfg.Offsets.Fetch(group, w.topic, p)
			if !ok {
				off, meta = -1, ""
			}
			t.offsets = append(t.offsets, Committed{Topic: w.topic, Partition: p, Offset: off, Metadata: meta})
		}
		if len(t.offsets) == 0 && len(w.partitions) > 0 {
			continue // every partition answered already
		}
		out = append(out, t)
	}
	return out
}
