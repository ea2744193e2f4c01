package reliable

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestMaxTopicLen: a Sender takes a topic of MaxTopicLen bytes and
// refuses one byte more (ErrTooLarge); the command line checks topics
// against MaxTopicLen before it starts.
func TestMaxTopicLen(t *testing.T) {
	s, err := NewSender(SenderConfig{Session: 1}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{MaxTopicLen, MaxTopicLen + 1} {
		_, err := s.Publish(time.Unix(0, 0), &transport.Message{Topic: strings.Repeat("t", n), Payload: []byte("x")})
		if tooLarge := errors.Is(err, ErrTooLarge); tooLarge != (n > MaxTopicLen) || (err != nil && !tooLarge) {
			t.Errorf("a topic of %d bytes: %v", n, err)
		}
	}
}
