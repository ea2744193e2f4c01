package kafka

import "fmt"

// maxTopicLen is Kafka's limit on a topic name.
const maxTopicLen = 249

// topicRule says which names checkTopic accepts.
const topicRule = `want 1 to 249 of the characters a-z A-Z 0-9 . _ - (and not "." or "..")`

// checkTopic returns an error unless Kafka would accept name as a topic
// (a broker refuses others with INVALID_TOPIC_EXCEPTION, and a consumer
// of one waits for nothing).
func checkTopic(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > maxTopicLen {
		return fmt.Errorf("topic %q: %s", name, topicRule)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic %q: %s", name, topicRule)
		}
	}
	return nil
}
