package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// maxLine is the longest input line: the transport's default largest
// message.
const maxLine = reliable.DefaultMaxMessageSize

// publishLines publishes each line of r (without its line ending) as one
// message with the given topic, until EOF, limit lines (0: no limit) or
// the end of ctx, and returns how many it published.
//
// r is read on its own goroutine so that an interrupt is honoured while a
// terminal or pipe has nothing to say; if ctx ends during such a read,
// that goroutine stays blocked in it until r returns.
func publishLines(ctx context.Context, pub transport.Publisher, r io.Reader, topic string, limit uint64) (uint64, error) {
	lines := make(chan []byte, 256)
	readErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxLine)
		for sc.Scan() {
			select {
			case lines <- bytes.Clone(sc.Bytes()):
			case <-done:
				return
			}
		}
		readErr <- sc.Err()
	}()
	var sent uint64
	for limit == 0 || sent < limit {
		var line []byte
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
			return sent, ctx.Err()
		}
		if !ok {
			return sent, lineError(<-readErr, sent)
		}
		if err := pub.Publish(ctx, transport.Message{Topic: topic, Payload: line}); err != nil {
			return sent, &publisherError{err}
		}
		sent++
	}
	return sent, nil
}

func lineError(err error, sent uint64) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("stdin line %d is longer than %d bytes", sent+1, maxLine)
	default:
		return fmt.Errorf("reading stdin: %w", err)
	}
}
