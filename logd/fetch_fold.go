package logd

import "github.com/twmb/franz-go/pkg/kmsg"

// foldFetchPartitions folds the repeated partitions of a Fetch into one,
// as Kafka does (its request is a map by partition): the partition is
// answered once, where it first appears, reading as its last mention
// asks; a topic entry left with no partition goes. It returns how many
// mentions it folded away.
func foldFetchPartitions(req *kmsg.FetchRequest) int {
	if !fetchRepeats(req) {
		return 0
	}
	type key struct {
		topic     string
		partition int32
	}
	first := map[key]*kmsg.FetchRequestTopicPartition{}
	folded := 0
	topics := req.Topics[:0]
	for _, t := range req.Topics {
		parts := t.Partitions[:0]
		for _, p := range t.Partitions {
			k := key{t.Topic, p.Partition}
			if at, ok := first[k]; ok {
				*at = p
				folded++
				continue
			}
			parts = append(parts, p)
			first[k] = &parts[len(parts)-1]
		}
		if t.Partitions = parts; len(parts) > 0 {
			topics = append(topics, t)
		}
	}
	req.Topics = topics
	return folded
}

// fetchRepeats says whether a Fetch names a partition more than once,
// without allocating for a request of few partitions.
func fetchRepeats(req *kmsg.FetchRequest) bool {
	const small = 32
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	if n <= small {
		for i, t := range req.Topics {
			for j, p := range t.Partitions {
				for _, q := range t.Partitions[j+1:] {
					if q.Partition == p.Partition {
						return true
					}
				}
				for _, u := range req.Topics[i+1:] {
					if u.Topic != t.Topic {
						continue
					}
					for _, q := range u.Partitions {
						if q.Partition == p.Partition {
							return true
						}
					}
				}
			}
		}
		return false
	}
	type key struct {
		topic     string
		partition int32
	}
	seen := make(map[key]struct{}, n)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := key{t.Topic, p.Partition}
			if _, ok := seen[k]; ok {
				return true
			}
			seen[k] = struct{}{}
		}
	}
	return false
}
