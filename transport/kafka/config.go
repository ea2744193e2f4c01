package kafka

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// ErrBadConfig wraps every configuration error.
var ErrBadConfig = errors.New("kafka transport: bad config")

// Config configures a Publisher or Subscriber.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// Topic is the topic published to and consumed. Required.
	Topic string
	// From is where a subscriber without a group starts. Default
	// earliest.
	From kgo.Offset
	// Partition, when at least 0, restricts a subscriber to one
	// partition. Default -1: all.
	Partition int32
	// Group makes the subscriber a member of this consumer group.
	Group string
	// LeaderAcks answers produces once the broker wrote them instead of
	// once they are durable (acks=all, the default).
	LeaderAcks bool
	// Options are extra kgo options, applied last.
	Options []kgo.Opt
}

func (c *Config) validate() error {
	switch {
	case len(c.Brokers) == 0:
		return fmt.Errorf("%w: no broker", ErrBadConfig)
	case c.Topic == "":
		return fmt.Errorf("%w: no topic", ErrBadConfig)
	}
	return nil
}

// ParseURL turns a logd:// (or kafka://) URL into a Config.
func ParseURL(u *url.URL) (Config, error) {
	cfg := Config{Partition: -1, From: kgo.NewOffset().AtStart()}
	bad := func(format string, args ...any) (Config, error) {
		return cfg, fmt.Errorf("%w: "+format, append([]any{transport.ErrBadURL}, args...)...)
	}
	if u.Host == "" {
		return bad("no broker address")
	}
	cfg.Brokers = strings.Split(u.Host, ",")
	cfg.Topic = strings.Trim(u.Path, "/")
	if cfg.Topic == "" || strings.Contains(cfg.Topic, "/") {
		return bad("path %q must be one topic", u.Path)
	}
	q := u.Query()
	switch from := q.Get("from"); {
	case from == "" || from == "earliest":
	case from == "latest":
		cfg.From = kgo.NewOffset().AtEnd()
	default:
		if off, err := strconv.ParseInt(from, 10, 64); err == nil && off >= 0 {
			cfg.From = kgo.NewOffset().At(off)
		} else if t, err := time.Parse(time.RFC3339Nano, from); err == nil {
			cfg.From = kgo.NewOffset().AfterMilli(t.UnixMilli())
		} else {
			return bad("from=%q: want earliest, latest, an offset or an RFC 3339 time", from)
		}
	}
	if p := q.Get("partition"); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return bad("partition=%q", p)
		}
		cfg.Partition = int32(n)
	}
	cfg.Group = q.Get("group")
	switch acks := q.Get("acks"); acks {
	case "", "all":
	case "leader":
		cfg.LeaderAcks = true
	default:
		return bad("acks=%q: want all or leader", acks)
	}
	return cfg, nil
}
