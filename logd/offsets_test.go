package logd

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// TestOffsetCommitMetadataLimit: the group coordinator applies
// Storage.MaxOffsetMetadata (Kafka's offset.metadata.max.bytes, default
// 4096): a partition whose metadata is over it is answered
// OFFSET_METADATA_TOO_LARGE and nothing is committed for it, while the
// other partitions of the same commit are committed.
func TestOffsetCommitMetadataLimit(t *testing.T) {
	for _, c := range []struct {
		what  string
		limit int // 0: unset
		max   int // the longest metadata accepted
	}{
		{"configured", 16, 16},
		{"default", 0, storage.DefaultMaxOffsetMetadata},
	} {
		t.Run(c.what, func(t *testing.T) {
			ts := startServer(t, t.TempDir(), func(cfg *Config) { cfg.Storage.MaxOffsetMetadata = c.limit })
			cl := newClient(t, ts.addr)
			createTopic(t, cl, "t", 2)

			commit := kmsg.NewPtrOffsetCommitRequest()
			commit.Group, commit.Generation = "g", -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "t"
			for p, n := range []int{c.max, c.max + 1} {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.Metadata = int32(p), 7, kmsg.StringPtr(strings.Repeat("m", n))
				rt.Partitions = append(rt.Partitions, rp)
			}
			commit.Topics = append(commit.Topics, rt)
			resp, err := commit.RequestWith(context.Background(), cl)
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range []int16{0, kerr.OffsetMetadataTooLarge.Code} {
				if got := resp.Topics[0].Partitions[p].ErrorCode; got != want {
					t.Errorf("commit partition %d: error %d, want %d", p, got, want)
				}
			}

			fetch := kmsg.NewPtrOffsetFetchRequest()
			fetch.Group = "g"
			ft := kmsg.NewOffsetFetchRequestTopic()
			ft.Topic, ft.Partitions = "t", []int32{0, 1}
			fetch.Topics = append(fetch.Topics, ft)
			fresp, err := fetch.RequestWith(context.Background(), cl)
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range []int64{7, -1} {
				if got := fresp.Topics[0].Partitions[p].Offset; got != want {
					t.Errorf("fetched partition %d: offset %d, want %d", p, got, want)
				}
			}
		})
	}
}
