package statsd

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestConsoleCloseBlockedWriter: a server whose console writes to a
// pipe nobody reads leaves no goroutine behind once closed: Close
// interrupts the blocked write (a write deadline on the pipe) and the
// console's writer ends.
func TestConsoleCloseBlockedWriter(t *testing.T) {
	base := runtime.NumGoroutine()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // never read
	defer w.Close()
	cfg := Config{TCP: []string{"127.0.0.1:0"}, Backends: []Backend{NewConsole(w, ConsoleConfig{})},
		BackendTimeout: 200 * time.Millisecond}
	cfg.FlushInterval = time.Hour
	s, err := NewServer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 3000 lines of some 70 bytes: more than a pipe holds.
	const keys = 3000
	var in strings.Builder
	for i := range keys {
		fmt.Fprintf(&in, "blocked.key.%d:1|c\n", i)
	}
	sendTCP(t, s, in.String())
	waitReceived(t, s, 0, keys)
	if err := s.Flush(context.Background()).Server.BackendErrors["console"]; err != 0 {
		t.Fatalf("%d backend errors before the first flush", err)
	}
	if !consoleWriting() {
		t.Fatal("no console writer blocked on the pipe: the test proves nothing")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close blocked on the console's writer")
	}
	deadline := time.Now().Add(10 * time.Second)
	for consoleWriting() || runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			t.Fatalf("after Close: console writer still running %v, %d goroutines, %d before",
				consoleWriting(), runtime.NumGoroutine(), base)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// consoleWriting reports whether a goroutine runs a Console's writer.
func consoleWriting() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "statsd.(*Console).write(")
}
