package logd

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataRepeatedTopicAnsweredOnce: a topic named several times in
// one Metadata request is listed once, as by Kafka (KafkaApis takes the
// request's topics as a set). A 60 KB request naming a topic of 1024
// partitions 20000 times was answered with 20000 copies of its
// partitions, 600 MB, for minutes (here: 64 partitions, 2000 times).
func TestMetadataRepeatedTopicAnsweredOnce(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 64)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	for _, name := range []string{"t", "u", "t"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, mt)
	}
	for range 2000 {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("t")
		req.Topics = append(req.Topics, mt)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rt := range resp.Topics {
		names = append(names, *rt.Topic)
	}
	if len(names) != 2 || names[0] != "t" || names[1] != "u" {
		n := len(names)
		t.Fatalf("a Metadata naming t, u, then t 2001 times listed %d topics (the first %q), want t and u once each", n, names[:min(n, 3)])
	}
}

// TestDescribeConfigsRepeatedResourceAnsweredOnce: a resource named
// several times in one DescribeConfigs is described once, where first
// named (Kafka describes it at every mention): each description lists
// every config of the topic, 2 KB, for 8 bytes a mention.
func TestDescribeConfigsRepeatedResourceAnsweredOnce(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	req := kmsg.NewPtrDescribeConfigsRequest()
	for range 5000 {
		for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker} {
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName = typ, "t"
			req.Resources = append(req.Resources, r)
		}
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.Resources); n != 2 || len(resp.Resources[0].Configs) == 0 {
		t.Fatalf("a DescribeConfigs naming topic t and broker t 5000 times each was answered with %d descriptions, want 2", n)
	}
}
