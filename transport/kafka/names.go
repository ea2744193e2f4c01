package kafka

import (
	"fmt"
	"net"
	"strconv"
)

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

// checkBroker returns an error unless addr is HOST:PORT with a host and
// a port a broker can listen on: a client would otherwise dial a default
// port (9092), the local host for an empty HOST, or fail only later.
func checkBroker(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("broker %q: want HOST:PORT, e.g. 127.0.0.1:9092", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("broker %q: want a port from 1 to 65535", addr)
	}
	return nil
}
