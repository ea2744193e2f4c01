package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// childArgs names the environment variable that makes the test binary
// run the command line it holds (arguments separated by "\x1f") instead
// of the tests: a child process the kill tests can SIGKILL.
const childArgs = "BROKERLESS_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgs); ok {
		ctx, stop := interruptContext(os.Stderr, os.Exit)
		code := run(ctx, strings.Split(args, "\x1f"), stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
		stop()
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// syncBuffer is a bytes.Buffer safe for concurrent use that can signal
// when its content first contains a string.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	want   string
	seen   chan struct{}
	closed bool
}

// newSyncBuffer returns a buffer whose seen channel is closed once the
// text written contains want.
func newSyncBuffer(want string) *syncBuffer {
	return &syncBuffer{want: want, seen: make(chan struct{})}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if !b.closed && b.want != "" && strings.Contains(b.buf.String(), b.want) {
		close(b.seen)
		b.closed = true
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runCLI runs the command line args with the given stdin and returns the
// exit status, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	code = run(context.Background(), args, stdio{in: strings.NewReader(stdin), out: &out, err: &errw})
	return code, out.String(), errw.String()
}
