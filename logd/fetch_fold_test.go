package logd

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFoldFetchPartitions(t *testing.T) {
	many := make([]int32, 40)
	for i := range many {
		many[i] = int32(i)
	}
	for _, c := range []struct {
		name   string
		topics [][]int32 // topic "a", "b", "a", ... in turn
		want   string
		folded int
	}{
		{"none", [][]int32{{0, 1}, {0}}, "[a:[0@0 1@1] b:[0@2]]", 0},
		{"same topic", [][]int32{{1, 0, 1}}, "[a:[1@2 0@1]]", 1},
		{"topic named twice", [][]int32{{0}, {0}, {0, 1}}, "[a:[0@2] b:[0@1] a:[1@3]]", 1},
		{"topic left empty", [][]int32{{0}, {}, {0}}, "[a:[0@1]]", 1},
		{"many", [][]int32{many, {}, {39, 5}}, "", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := kmsg.NewPtrFetchRequest()
			at := int64(0)
			for i, ps := range c.topics {
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = string(rune('a' + i%2))
				for _, p := range ps {
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.FetchOffset = p, at
					at++
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			if n := foldFetchPartitions(req); n != c.folded {
				t.Errorf("folded %d, want %d", n, c.folded)
			}
			var got []string
			n := 0
			for _, rt := range req.Topics {
				var ps []string
				for _, p := range rt.Partitions {
					ps = append(ps, fmt.Sprintf("%d@%d", p.Partition, p.FetchOffset))
					n++
				}
				got = append(got, fmt.Sprintf("%s:%v", rt.Topic, ps))
			}
			if c.want != "" && fmt.Sprint(got) != c.want {
				t.Errorf("folded into %v, want %s", got, c.want)
			}
			if c.name == "many" && (n != 40 || req.Topics[0].Partitions[39].FetchOffset != 40 || req.Topics[0].Partitions[5].FetchOffset != 41) {
				t.Errorf("folded into %v", got)
			}
		})
	}
}
