package kafka

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

func TestURL(t *testing.T) {
	for _, good := range []string{
		"logd://127.0.0.1:9092/t", "kafka://a:1,b:2/t?from=latest&group=g&acks=leader",
		"logd://h:1/t?from=42&partition=3", "logd://h:1/t?from=2026-01-02T03:04:05Z",
		"logd://h:1/t?group=g&instance=i&session=2m&rebalance=3m", "logd://h:1/t?compression=none", "logd://h:1/t?buffer=500000",
		"logd://h:1/Ab.c_d-9", "logd://h:1/" + strings.Repeat("t", 249), "logd://[::1]:9092/t", "kafka://h:65535/t",
	} {
		if _, err := transport.Open(context.Background(), good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, tc := range []struct{ url, says string }{
		{"logd://h:1/", "must be one topic"},
		{"logd:///t", "no broker address"},
		{"logd://h:1/t?from=soon", `from="soon"`},
		{"logd://h:1/t?from=-3", `from="-3"`},
		{"logd://h:1/t?acks=2", `acks="2"`},
		{"logd://h:1/a/b", "must be one topic"},
		{"logd://h:1/t?form=1", `unknown parameter "form"`},
		{"logd://h:1/t?partition=1&partition=2", `parameter "partition" given 2 times`},
		{"logd://h:1/t?partition=x", `partition="x"`},
		{"logd://h:1/t?group=", "want a group name"},
		{"logd://h:1/t?group=g&partition=0", "partition and group together"},
		{"logd://h:1/t?from=1;2", "query"},
		{"logd://h:1/t?instance=i", `instance="i": want a name, with group`},
		{"logd://h:1/t?group=g&instance=", `instance="": want a name`},
		{"logd://h:1/t?group=g&session=0s", `session="0s"`},
		{"logd://h:1/t?group=g&session=soon", `session="soon"`},
		{"logd://h:1/t?session=1m", `session="1m"`},
		{"logd://h:1/t?group=g&rebalance=-1s", `rebalance="-1s"`},
		{"logd://h:1/t?linger=-1ms", `linger="-1ms"`},
		{"logd://h:1/t?linger=soon", `linger="soon"`},
		{"logd://h:1/t?compression=brotli", `compression="brotli"`},
		{"logd://h:1/t?compression=", `compression=""`},
		{"logd://h:1/t?buffer=0", `buffer="0"`},
		{"logd://h:1/t?buffer=lots", `buffer="lots"`},
		{"logd://127.0.0.1/t", `broker "127.0.0.1": want HOST:PORT, e.g. 127.0.0.1:9092`},
		{"logd://:9092/t", `broker ":9092": want HOST:PORT`},
		{"logd://h:0/t", `broker "h:0": want a port from 1 to 65535`},
		{"logd://h:65536/t", `broker "h:65536": want a port from 1 to 65535`},
		{"logd://h:1,,h:2/t", `broker "": want HOST:PORT`},
		{"kafka://h2,h:1/t", `broker "h2": want HOST:PORT`},
		{"logd://u:p@h:1/t", "logd:// takes no user: this transport does not authenticate"},
		{"logd://h:1/t#x", `logd:// takes no fragment ("x")`},
		{"logd://h:1/bad%20topic", `topic "bad topic": want 1 to 249 of the characters a-z A-Z 0-9 . _ -`},
		{"logd://h:1/..", `topic "..": want`},
		{"logd://h:1/" + strings.Repeat("t", 250), `topic "tttt`},
		{"logd://h:1/caf%C3%A9", `topic "café": want`},
	} {
		_, err := transport.Open(context.Background(), tc.url)
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.url)
		case !errors.Is(err, transport.ErrBadURL):
			t.Errorf("%s: %v does not wrap ErrBadURL", tc.url, err)
		case !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: %q, want one line saying %q", tc.url, err, tc.says)
		}
	}
}

func TestParseURL(t *testing.T) {
	u, _ := url.Parse("logd://h:1/t?form=1")
	if _, err := ParseURL(u); err == nil || !strings.Contains(err.Error(), `unknown parameter "form" (known: acks, buffer, compression, from, group, instance, linger, partition, rebalance, session)`) {
		t.Errorf("ParseURL of an unknown parameter: %v", err)
	}

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		url  string
		want Config
	}{
		{"logd://h:1/t", Config{Brokers: []string{"h:1"}, Topic: "t"}},
		{"kafka://a:1,b:2/t?from=latest&group=g&acks=leader", Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", From: Latest(), Group: "g", LeaderAcks: true}},
		{"logd://h:1/t?from=42&partition=3", Config{Brokers: []string{"h:1"}, Topic: "t", From: AtOffset(42), Partitions: []int32{3}}},
		{"logd://h:1/t?from=2026-01-02T03:04:05Z", Config{Brokers: []string{"h:1"}, Topic: "t", From: AtTime(at)}},
		{"logd://h:1/t?from=earliest&acks=all", Config{Brokers: []string{"h:1"}, Topic: "t"}},
		{"logd://h:1/t?linger=5ms", Config{Brokers: []string{"h:1"}, Topic: "t", Linger: 5 * time.Millisecond}},
		{"logd://h:1/t?compression=zstd", Config{Brokers: []string{"h:1"}, Topic: "t", Compression: "zstd"}},
		{"logd://h:1/t?buffer=500000", Config{Brokers: []string{"h:1"}, Topic: "t", MaxBuffered: 500_000}},
		{"logd://h:1/t?group=g&instance=i&session=2m&rebalance=3m", Config{Brokers: []string{"h:1"}, Topic: "t", Group: "g", Instance: "i",
			SessionTimeout: 2 * time.Minute, RebalanceTimeout: 3 * time.Minute}},
	} {
		u, _ := url.Parse(tc.url)
		got, err := ParseURL(u)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v %v, want %+v", tc.url, got, err, tc.want)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Brokers: []string{"h:1"}, Topic: "t"}
	for _, tc := range []struct {
		field string
		cfg   func(Config) Config
	}{
		{"Brokers", func(c Config) Config { c.Brokers = nil; return c }},
		{"Topic", func(c Config) Config { c.Topic = ""; return c }},
		{"Topic", func(c Config) Config { c.Topic = "a b"; return c }},
		{"Brokers", func(c Config) Config { c.Brokers = []string{"h:1", "h"}; return c }},
		{"Brokers", func(c Config) Config { c.Brokers = []string{"h:0"}; return c }},
		{"From", func(c Config) Config { c.From = AtOffset(-1); return c }},
		{"Partitions", func(c Config) Config { c.Partitions = []int32{-1}; return c }},
		{"Partitions", func(c Config) Config { c.Partitions, c.Group = []int32{0}, "g"; return c }},
		{"Instance", func(c Config) Config { c.Instance = "i"; return c }},
		{"SessionTimeout", func(c Config) Config { c.SessionTimeout = time.Minute; return c }},
		{"SessionTimeout", func(c Config) Config { c.SessionTimeout, c.Group = -1, "g"; return c }},
		{"RebalanceTimeout", func(c Config) Config { c.RebalanceTimeout = time.Minute; return c }},
		{"Linger", func(c Config) Config { c.Linger = -time.Millisecond; return c }},
		{"Compression", func(c Config) Config { c.Compression = "brotli"; return c }},
	} {
		cfg := tc.cfg(ok)
		err := cfg.validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	ctx := context.Background()
	if _, err := NewSubscriber(ctx, Config{Brokers: []string{"h:1"}, Topic: "t", Group: "g"}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("NewSubscriber with a group: %v", err)
	}
	if _, err := NewGroupSubscriber(ctx, ok); !errors.Is(err, ErrBadConfig) {
		t.Errorf("NewGroupSubscriber without a group: %v", err)
	}
}
