package logd

import (
	"fmt"
	"strconv"
	"time"

	"github.com/brokerless/brokerless/logd/storage"
)

// topicConfigKeys are the Kafka topic configs logd honours.
var topicConfigKeys = []string{
	"cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes", "segment.ms",
	"delete.retention.ms", "max.message.bytes",
}

// parseTopicConfig turns CreateTopics config entries into storage
// overrides. An unknown name or a bad value is an error wrapping
// ErrInvalidConfig.
func parseTopicConfig(entries map[string]*string) (storage.TopicConfig, error) {
	var tc storage.TopicConfig
	for name, v := range entries {
		if v == nil {
			continue
		}
		val := *v
		var err error
		switch name {
		case "cleanup.policy":
			tc.Cleanup, err = storage.ParseCleanupPolicy(val)
		case "retention.ms":
			tc.RetentionAge, err = millis(val)
		case "retention.bytes":
			tc.RetentionBytes, err = strconv.ParseInt(val, 10, 64)
		case "segment.bytes":
			tc.SegmentBytes, err = strconv.ParseInt(val, 10, 64)
		case "segment.ms":
			tc.SegmentAge, err = millis(val)
		case "delete.retention.ms":
			tc.DeleteRetention, err = millis(val)
		case "max.message.bytes":
			tc.MaxBatchBytes, err = strconv.Atoi(val)
		default:
			err = fmt.Errorf("not supported (supported: %v)", topicConfigKeys)
		}
		if err != nil {
			return tc, fmt.Errorf("%w: %s=%q: %v", ErrInvalidConfig, name, val, err)
		}
	}
	return tc, nil
}

// millis parses a Kafka millisecond setting; a negative value means
// unlimited (-1 in storage).
func millis(s string) (time.Duration, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return 0, err
	case v < 0:
		return -1, nil
	case v == 0:
		return 0, fmt.Errorf("must be positive")
	}
	return time.Duration(v) * time.Millisecond, nil
}

// topicConfigValues renders a topic's effective configuration in Kafka's
// names and units.
func topicConfigValues(tc storage.TopicConfig) map[string]string {
	ms := func(d time.Duration) string {
		if d < 0 {
			return "-1"
		}
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	return map[string]string{
		"cleanup.policy":      tc.Cleanup.String(),
		"retention.ms":        ms(tc.RetentionAge),
		"retention.bytes":     strconv.FormatInt(tc.RetentionBytes, 10),
		"segment.bytes":       strconv.FormatInt(tc.SegmentBytes, 10),
		"segment.ms":          ms(tc.SegmentAge),
		"delete.retention.ms": ms(tc.DeleteRetention),
		"max.message.bytes":   strconv.Itoa(tc.MaxBatchBytes),
	}
}
