package pipe_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// freshLogd deletes every topic of the logd at addr and writes back what
// is dirty in the page cache (settleDisk), so that the next run starts
// on an empty logd, in the same disk and memory state as every other.
func freshLogd(b *testing.B, addr string) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl) // no topics named: all of them
	if err != nil {
		b.Fatal(err)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 60_000
	for _, t := range meta.Topics {
		if t.Topic == nil {
			continue
		}
		del.TopicNames = append(del.TopicNames, *t.Topic) // before v6
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = t.Topic
		del.Topics = append(del.Topics, dt)
	}
	if len(del.Topics) > 0 {
		resp, err := del.RequestWith(ctx, cl)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range resp.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				b.Fatalf("deleting topic %v: %v", t.Topic, err)
			}
		}
	}
	settleDisk()
}
