package kafka

import (
	"context"
	"net/url"

	"github.com/brokerless/brokerless/transport"
)

func init() {
	for _, sc := range []struct{ name, summary string }{
		{"logd", "a topic of logd, brokerless's log daemon (Kafka protocol)"},
		{"kafka", "a topic of any Kafka-protocol broker: Kafka, Redpanda, logd"},
	} {
		name := sc.name
		transport.Register(transport.Scheme{
			Name:      name,
			Open:      openURL,
			Summary:   sc.summary,
			Form:      name + "://HOST:PORT[,HOST:PORT...]/TOPIC[?PARAM=VALUE&...]",
			Semantics: semantics,
			Notes: `A stream is a partition; a message's position is its offset. A publish is
done once the broker acknowledged it: with acks=all, once it is durable
(logd's --fsync policy; Kafka's replication), and deduplicated by the
idempotent producer. A subscriber replays from any offset or time; offsets
it cannot have (deleted by retention) are reported as a gap, and holes left
by compaction as a gap that is not loss. A gap marker a pipe wrote is read
back as the gap it stands for, an end marker as its stream's end. With group=NAME a subscriber is a member of
a consumer group that commits only what the application acknowledged:
at-least-once, and so neither deduplicated nor replayable. acks=leader
answers before the write is durable and turns deduplication off.`,
			Params: []transport.Param{
				{Name: "from", Value: "earliest|latest|OFFSET|TIME", Doc: "where a subscriber starts, or a group member where its group has no committed offset; TIME is RFC 3339 (default earliest)"},
				{Name: "partition", Value: "N", Doc: "read only this partition, and publish to it (default: all; publish by key)"},
				{Name: "group", Value: "NAME", Doc: "consume as a member of this consumer group, from its committed offsets, acknowledging (not with partition)"},
				{Name: "instance", Value: "NAME", Doc: "with group: a static member under this name (group.instance.id), which takes its old place at once when it restarts; one name per member"},
				{Name: "session", Value: "DURATION", Doc: "with group: the session timeout, how long the group keeps a silent member (default 45s)"},
				{Name: "rebalance", Value: "DURATION", Doc: "with group: how long a rebalance waits for the members to join again (default 60s)"},
				{Name: "acks", Value: "all|leader", Doc: "a publish is done once durable (all, the default) or once the leader wrote it"},
				{Name: "linger", Value: "DURATION", Doc: "publisher: how long a partition's records wait to fill a batch (default 0: sent at once, what arrives while a request is in flight goes in the next)"},
				{Name: "compression", Value: "none|gzip|snappy|lz4|zstd", Doc: "publisher: the codec of its record batches (default snappy; none for values that do not compress)"},
				{Name: "buffer", Value: "N", Doc: "publisher: the records it holds before a publish waits for acknowledgements (default 100000, librdkafka's; more rides out longer broker pauses at the cost of memory)"},
			},
			Examples: []transport.Example{
				{URL: name + "://127.0.0.1:9092/prices", Doc: "the topic prices, read from its start"},
				{URL: name + "://127.0.0.1:9092/prices?from=latest", Doc: "only what is published from now on"},
				{URL: name + "://127.0.0.1:9092/prices?from=2025-01-02T15:04:05Z", Doc: "replay from a time"},
				{URL: name + "://127.0.0.1:9092/prices?group=dashboard", Doc: "a member of the consumer group dashboard"},
			},
		})
	}
}

type endpoint struct{ cfg Config }

// NewEndpoint is the Endpoint of cfg: what transport.Open makes of a
// logd:// or kafka:// URL (cfg from ParseURL), for a program that sets
// more of cfg than a URL says, such as its Logger.
func NewEndpoint(cfg Config) transport.Endpoint { return endpoint{cfg} }

func (e endpoint) Publisher(ctx context.Context) (transport.Publisher, error) {
	p, err := NewPublisher(ctx, e.cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Subscriber is a GroupSubscriber (an Acknowledger) when the URL names a
// group, else a Subscriber.
func (e endpoint) Subscriber(ctx context.Context) (transport.Subscriber, error) {
	if e.cfg.Group != "" {
		g, err := NewGroupSubscriber(ctx, e.cfg)
		if err != nil {
			return nil, err
		}
		return g, nil
	}
	s, err := NewSubscriber(ctx, e.cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func openURL(_ context.Context, u *url.URL, o transport.Options) (transport.Endpoint, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	if o.Logger != nil {
		cfg.Logger = o.Logger
	}
	return endpoint{cfg}, nil
}
