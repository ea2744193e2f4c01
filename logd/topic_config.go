package logd

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// kafkaTopicConfig is one topic-level config Kafka knows: its type, its
// default as Kafka reports it, and the check Kafka applies to a value
// (beyond parsing as its type).
type kafkaTopicConfig struct {
	typ   kmsg.ConfigType
	def   string
	check func(string) error
	// applied: logd honours it (it maps onto storage.TopicConfig); the
	// others are kept with the topic and shown, not applied.
	applied bool
}

const maxLong = "9223372036854775807"

// kafkaTopicConfigs is every topic-level config of Kafka 3.x (3.0 to
// 3.9), with the loosest range any of those versions accepts: Kafka
// Streams, Connect and Debezium create topics with them, and a name
// Kafka knows is never refused. Ranges and defaults follow Kafka's
// LogConfig; logd applies the ones marked applied.
var kafkaTopicConfigs = map[string]kafkaTopicConfig{
	"cleanup.policy":                          {kmsg.ConfigTypeList, "delete", checkCleanupPolicy, true},
	"compression.type":                        {kmsg.ConfigTypeString, "producer", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), false},
	"compression.gzip.level":                  {kmsg.ConfigTypeInt, "-1", checkGzipLevel, false},
	"compression.lz4.level":                   {kmsg.ConfigTypeInt, "9", intBetween(1, 17), false},
	"compression.zstd.level":                  {kmsg.ConfigTypeInt, "3", intBetween(-131072, 22), false},
	"delete.retention.ms":                     {kmsg.ConfigTypeLong, "86400000", longAtLeast(0), true},
	"file.delete.delay.ms":                    {kmsg.ConfigTypeLong, "60000", longAtLeast(0), false},
	"flush.messages":                          {kmsg.ConfigTypeLong, maxLong, longAtLeast(0), false},
	"flush.ms":                                {kmsg.ConfigTypeLong, maxLong, longAtLeast(0), false},
	"follower.replication.throttled.replicas": {kmsg.ConfigTypeList, "", checkThrottledReplicas, false},
	"index.interval.bytes":                    {kmsg.ConfigTypeInt, "4096", intBetween(0, math.MaxInt32), true},
	"leader.replication.throttled.replicas":   {kmsg.ConfigTypeList, "", checkThrottledReplicas, false},
	"local.retention.bytes":                   {kmsg.ConfigTypeLong, "-2", longAtLeast(-2), false},
	"local.retention.ms":                      {kmsg.ConfigTypeLong, "-2", longAtLeast(-2), false},
	"max.compaction.lag.ms":                   {kmsg.ConfigTypeLong, maxLong, longAtLeast(1), false},
	"max.message.bytes":                       {kmsg.ConfigTypeInt, "1048588", intBetween(0, math.MaxInt32), true},
	"message.downconversion.enable":           {kmsg.ConfigTypeBoolean, "true", checkBool, false},
	"message.format.version":                  {kmsg.ConfigTypeString, "3.0-IV1", checkVersion, false},
	"message.timestamp.after.max.ms":          {kmsg.ConfigTypeLong, maxLong, longAtLeast(0), false},
	"message.timestamp.before.max.ms":         {kmsg.ConfigTypeLong, maxLong, longAtLeast(0), false},
	"message.timestamp.difference.max.ms":     {kmsg.ConfigTypeLong, maxLong, longAtLeast(0), false},
	"message.timestamp.type":                  {kmsg.ConfigTypeString, "CreateTime", oneOf("CreateTime", "LogAppendTime"), false},
	"min.cleanable.dirty.ratio":               {kmsg.ConfigTypeDouble, "0.5", checkRatio, false},
	"min.compaction.lag.ms":                   {kmsg.ConfigTypeLong, "0", longAtLeast(0), false},
	"min.insync.replicas":                     {kmsg.ConfigTypeInt, "1", intBetween(1, math.MaxInt32), false},
	"preallocate":                             {kmsg.ConfigTypeBoolean, "false", checkBool, false},
	"remote.log.copy.disable":                 {kmsg.ConfigTypeBoolean, "false", checkBool, false},
	"remote.log.delete.on.disable":            {kmsg.ConfigTypeBoolean, "false", checkBool, false},
	"remote.storage.enable":                   {kmsg.ConfigTypeBoolean, "false", checkBool, false},
	"retention.bytes":                         {kmsg.ConfigTypeLong, "-1", longAtLeast(math.MinInt64), true},
	"retention.ms":                            {kmsg.ConfigTypeLong, "604800000", longAtLeast(-1), true},
	"segment.bytes":                           {kmsg.ConfigTypeInt, "1073741824", intBetween(14, math.MaxInt32), true},
	"segment.index.bytes":                     {kmsg.ConfigTypeInt, "10485760", intBetween(0, math.MaxInt32), false},
	"segment.jitter.ms":                       {kmsg.ConfigTypeLong, "0", longAtLeast(0), false},
	"segment.ms":                              {kmsg.ConfigTypeLong, "604800000", longAtLeast(1), true},
	"unclean.leader.election.enable":          {kmsg.ConfigTypeBoolean, "false", checkBool, false},
}

// AppliedTopicConfigs are the Kafka topic configs logd honours, sorted;
// every other Kafka topic config is accepted, kept and shown, not
// applied.
func AppliedTopicConfigs() []string {
	var out []string
	for name, c := range kafkaTopicConfigs {
		if c.applied {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func parseKafkaLong(s string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(s), 10, 64) }

func longAtLeast(min int64) func(string) error {
	return func(s string) error {
		v, err := parseKafkaLong(s)
		switch {
		case err != nil:
			return fmt.Errorf("not a long")
		case v < min:
			return fmt.Errorf("must be at least %d", min)
		}
		return nil
	}
}

func intBetween(min, max int64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		switch {
		case err != nil:
			return fmt.Errorf("not an int")
		case v < min || v > max:
			return fmt.Errorf("must be in [%d, %d]", min, max)
		}
		return nil
	}
}

func checkGzipLevel(s string) error {
	if strings.TrimSpace(s) == "-1" {
		return nil
	}
	if err := intBetween(1, 9)(s); err != nil {
		return fmt.Errorf("must be -1 or in [1, 9]")
	}
	return nil
}

func checkBool(s string) error {
	if v := strings.ToLower(strings.TrimSpace(s)); v != "true" && v != "false" {
		return fmt.Errorf("not a boolean")
	}
	return nil
}

func checkRatio(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case err != nil:
		return fmt.Errorf("not a double")
	case v < 0 || v > 1:
		return fmt.Errorf("must be in [0, 1]")
	}
	return nil
}

func oneOf(valid ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(valid, strings.TrimSpace(s)) {
			return fmt.Errorf("must be one of %v", valid)
		}
		return nil
	}
}

// kafkaList splits a Kafka LIST value: comma-separated, trimmed; empty
// is the empty list.
func kafkaList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// checkCleanupPolicy: a list of "delete" and "compact". Kafka 3.x also
// takes the empty list (neither deletes nor compacts); logd has no such
// policy and refuses it.
func checkCleanupPolicy(s string) error {
	l := kafkaList(s)
	if len(l) == 0 {
		return fmt.Errorf("logd needs delete and/or compact (an empty policy is not supported)")
	}
	for _, p := range l {
		if p != "delete" && p != "compact" {
			return fmt.Errorf("%q is neither delete nor compact", p)
		}
	}
	return nil
}

var throttledReplica = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// checkThrottledReplicas is Kafka's ThrottledReplicaListValidator: "*"
// alone, or partition:broker pairs.
func checkThrottledReplicas(s string) error {
	l := kafkaList(s)
	if len(l) == 1 && l[0] == "*" {
		return nil
	}
	for _, r := range l {
		if !throttledReplica.MatchString(r) {
			return fmt.Errorf("must be * or a list of partition:broker")
		}
	}
	return nil
}

var kafkaVersion = regexp.MustCompile(`^(0\.(8|9|10|11)(\.[0-9]+)?|[1-3]\.[0-9]+(\.[0-9]+)?)(-IV[0-9]+)?$`)

// checkVersion: a Kafka release or inter-broker protocol version, as
// message.format.version takes ("0.10.2", "2.8", "3.0-IV1").
func checkVersion(s string) error {
	if !kafkaVersion.MatchString(strings.TrimSpace(s)) {
		return fmt.Errorf("not a Kafka version")
	}
	return nil
}

// parseTopicConfig checks CreateTopics config entries as Kafka does —
// an unknown name or a value outside what Kafka allows is an error
// wrapping ErrInvalidConfig — and returns the storage overrides: the
// configs logd applies mapped onto storage.TopicConfig, every other one
// kept in its Kafka map. A nil value means Kafka's default, as unset.
func parseTopicConfig(entries map[string]*string) (storage.TopicConfig, error) {
	var tc storage.TopicConfig
	// Sorted: the first bad one reported is always the same.
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		v := entries[name]
		if v == nil {
			continue
		}
		kc, ok := kafkaTopicConfigs[name]
		if !ok {
			return tc, fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, name)
		}
		if err := kc.check(*v); err != nil {
			return tc, fmt.Errorf("%w: %s=%q: %v", ErrInvalidConfig, name, *v, err)
		}
		if !kc.applied {
			if tc.Kafka == nil {
				tc.Kafka = map[string]string{}
			}
			tc.Kafka[name] = strings.TrimSpace(*v)
			continue
		}
		applyTopicConfig(&tc, name, strings.TrimSpace(*v))
	}
	return tc, checkCompactionLags(entries)
}

// checkCompactionLags is Kafka's cross-check: min.compaction.lag.ms must
// not exceed max.compaction.lag.ms.
func checkCompactionLags(entries map[string]*string) error {
	lag := func(name string) int64 {
		s := kafkaTopicConfigs[name].def
		if v := entries[name]; v != nil {
			s = *v
		}
		n, _ := parseKafkaLong(s)
		return n
	}
	if min, max := lag("min.compaction.lag.ms"), lag("max.compaction.lag.ms"); min > max {
		return fmt.Errorf("%w: min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", ErrInvalidConfig, min, max)
	}
	return nil
}

// applyTopicConfig maps a checked value of an applied config onto the
// overrides, in logd's units and ranges. A zero field means "inherit",
// so Kafka's zeros become the nearest logd can hold: retention.ms 0 is
// 1 ms, retention.bytes 0 is 1 byte, delete.retention.ms 0 is 1 ns,
// index.interval.bytes 0 is 1; sizes are clamped to logd's limits and
// times beyond what a Duration holds mean "never".
func applyTopicConfig(tc *storage.TopicConfig, name, v string) {
	n, _ := parseKafkaLong(v)
	switch name {
	case "cleanup.policy":
		l := kafkaList(v)
		switch {
		case slices.Contains(l, "compact") && slices.Contains(l, "delete"):
			tc.Cleanup = storage.CleanupCompactDelete
		case slices.Contains(l, "compact"):
			tc.Cleanup = storage.CleanupCompact
		default:
			tc.Cleanup = storage.CleanupDelete
		}
	case "retention.ms":
		tc.RetentionAge = kafkaMillis(max(n, 1), -1)
		if n < 0 {
			tc.RetentionAge = -1
		}
	case "retention.bytes":
		tc.RetentionBytes = n
		switch {
		case n < 0:
			tc.RetentionBytes = -1
		case n == 0:
			tc.RetentionBytes = 1
		}
	case "segment.bytes":
		tc.SegmentBytes = min(max(n, storage.MinSegmentBytes), storage.MaxSegmentBytes)
	case "segment.ms":
		tc.SegmentAge = kafkaMillis(n, -1)
	case "delete.retention.ms":
		tc.DeleteRetention = kafkaMillis(n, math.MaxInt64)
		if n == 0 {
			tc.DeleteRetention = time.Nanosecond
		}
	case "max.message.bytes":
		tc.MaxBatchBytes = int(min(max(n, storage.MinBatchBytes), storage.MaxBatchBytes))
	case "index.interval.bytes":
		tc.IndexIntervalBytes = int(max(n, 1))
	}
}

// kafkaMillis converts Kafka milliseconds to a Duration; beyond what a
// Duration holds, it returns beyond.
func kafkaMillis(ms int64, beyond time.Duration) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return beyond
	}
	return time.Duration(ms) * time.Millisecond
}

// topicConfigEntries describes a topic's configs as Kafka's
// DescribeConfigs does: every Kafka topic config, with the value logd
// applies for the ones it honours, the value the topic was created with
// for the others it keeps, and Kafka's default otherwise; Source says
// which were set on the topic.
func topicConfigEntries(info storage.TopicInfo) []kmsg.DescribeConfigsResponseResourceConfig {
	applied := appliedValues(info.Config)
	set := overridden(info.Overrides)
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(kafkaTopicConfigs))
	for _, name := range slices.Sorted(maps.Keys(kafkaTopicConfigs)) {
		kc := kafkaTopicConfigs[name]
		v := kc.def
		if kc.applied {
			v = applied[name]
		} else if kept, ok := info.Overrides.Kafka[name]; ok {
			v = kept
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ConfigType = name, kmsg.StringPtr(v), kc.typ
		c.Source, c.IsDefault = kmsg.ConfigSourceDefaultConfig, true
		if set[name] {
			c.Source, c.IsDefault = kmsg.ConfigSourceDynamicTopicConfig, false
		}
		out = append(out, c)
	}
	return out
}

// overridden names the Kafka configs the topic itself set.
func overridden(o storage.TopicConfig) map[string]bool {
	set := map[string]bool{
		"cleanup.policy":       o.Cleanup != storage.CleanupInherit,
		"retention.ms":         o.RetentionAge != 0,
		"retention.bytes":      o.RetentionBytes != 0,
		"segment.bytes":        o.SegmentBytes != 0,
		"segment.ms":           o.SegmentAge != 0,
		"delete.retention.ms":  o.DeleteRetention != 0,
		"max.message.bytes":    o.MaxBatchBytes != 0,
		"index.interval.bytes": o.IndexIntervalBytes != 0,
	}
	for name := range o.Kafka {
		set[name] = true
	}
	return set
}

// appliedValues renders a topic's effective configuration in Kafka's
// names and units.
func appliedValues(tc storage.TopicConfig) map[string]string {
	ms := func(d time.Duration) string {
		if d < 0 {
			return "-1"
		}
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	return map[string]string{
		"cleanup.policy":       tc.Cleanup.String(),
		"retention.ms":         ms(tc.RetentionAge),
		"retention.bytes":      strconv.FormatInt(tc.RetentionBytes, 10),
		"segment.bytes":        strconv.FormatInt(tc.SegmentBytes, 10),
		"segment.ms":           ms(tc.SegmentAge),
		"delete.retention.ms":  ms(tc.DeleteRetention),
		"max.message.bytes":    strconv.Itoa(tc.MaxBatchBytes),
		"index.interval.bytes": strconv.Itoa(tc.IndexIntervalBytes),
	}
}
