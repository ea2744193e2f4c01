package transporttest

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// baseTime is the event time of message 0. Later messages are spaced by
// a millisecond and a few nanoseconds, so both a nanosecond and a
// millisecond transport have something to get wrong.
var baseTime = time.Unix(1_700_000_000, 123_456_789)

// message is what the suite publishes as message i with a payload of
// size bytes: every field set, each derived from i.
func message(i, size int) transport.Message {
	parity := "even"
	if i%2 == 1 {
		parity = "odd"
	}
	return transport.Message{
		Time:  baseTime.Add(time.Duration(i) * (time.Millisecond + 1001*time.Nanosecond)),
		Topic: Topic,
		Key:   []byte("key-" + strconv.Itoa(i)),
		Headers: []transport.Header{
			{Key: "index", Value: []byte(strconv.Itoa(i))},
			{Key: "parity", Value: []byte(parity)},
		},
		Payload: Payload(i, size),
	}
}

// bulkSize is the payload size of message i in the bulk tests: varied,
// so transports that pack messages into datagrams see uneven sizes.
func bulkSize(i int) int { return payloadHeader + (i*37)%200 }

// verifyMessage checks that m is message(i, size(i)) as published,
// with its time within res, and returns i.
func verifyMessage(m transport.Message, size func(int) int, res time.Duration) (int, error) {
	i, err := PayloadIndex(m.Payload)
	if err != nil {
		return 0, err
	}
	want := message(i, size(i))
	switch {
	case len(m.Payload) != len(want.Payload):
		return i, fmt.Errorf("message %d: payload of %d bytes, published %d", i, len(m.Payload), len(want.Payload))
	case m.Topic != want.Topic:
		return i, fmt.Errorf("message %d: topic %q, published %q", i, m.Topic, want.Topic)
	case !bytes.Equal(m.Key, want.Key):
		return i, fmt.Errorf("message %d: key %q, published %q", i, m.Key, want.Key)
	case !timeClose(m.Time, want.Time, res):
		return i, fmt.Errorf("message %d: time %s, published %s (resolution %v)",
			i, m.Time.Format(time.RFC3339Nano), want.Time.Format(time.RFC3339Nano), res)
	case len(m.Headers) != len(want.Headers):
		return i, fmt.Errorf("message %d: %d headers, published %d", i, len(m.Headers), len(want.Headers))
	}
	for j, h := range m.Headers {
		if w := want.Headers[j]; h.Key != w.Key || !bytes.Equal(h.Value, w.Value) {
			return i, fmt.Errorf("message %d: header %d is %q=%q, published %q=%q", i, j, h.Key, h.Value, w.Key, w.Value)
		}
	}
	return i, nil
}

// timeClose reports whether got is want carried at resolution res: equal
// when res is zero, otherwise less than res apart.
func timeClose(got, want time.Time, res time.Duration) bool {
	if res == 0 {
		return got.Equal(want)
	}
	d := got.Sub(want)
	return d > -res && d < res
}
