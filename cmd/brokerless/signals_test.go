package main

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// signalClock is a fake clock for interruptContextClock that says on
// calls each time it is read, so that a test knows a signal was taken.
type signalClock struct {
	mu    sync.Mutex
	t     time.Time
	calls chan struct{}
}

func newSignalClock() *signalClock {
	return &signalClock{t: time.Unix(1_700_000_000, 0), calls: make(chan struct{}, 8)}
}

func (c *signalClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls <- struct{}{}
	return c.t
}

func (c *signalClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// kill sends sig to this process and waits until the signal goroutine
// read the clock for it; an exit that followed the read is left in
// exited for the caller (the goroutine reads the clock, then exits: the
// two may be seen together), one before it fails the test.
func (c *signalClock) kill(t *testing.T, sig syscall.Signal, exited chan int) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.calls:
	case code := <-exited:
		select {
		case <-c.calls:
			exited <- code
			return
		default:
		}
		t.Fatalf("%v: exit(%d) before the signal was read", sig, code)
	case <-time.After(10 * time.Second):
		t.Fatalf("%v was not taken", sig)
	}
}

// TestSecondSignalExits: the first SIGINT ends the context, the second
// (here a SIGTERM) exits at once with status 1, saying so.
func TestSecondSignalExits(t *testing.T) {
	w := newSyncBuffer("")
	exited := make(chan int, 2)
	clock := newSignalClock()
	ctx, stop := interruptContextClock(w, func(code int) { exited <- code }, clock.now)
	defer stop()
	clock.kill(t, syscall.SIGINT, exited)
	<-ctx.Done()
	clock.advance(signalEcho)
	clock.kill(t, syscall.SIGTERM, exited)
	select {
	case code := <-exited:
		if code != exitFailure || !strings.Contains(w.String(), "terminated again: exiting at once") {
			t.Errorf("exit(%d), wrote %q; want exit(1) and a line saying why", code, w.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not exit")
	}
}

// TestSignalDeliveredTwiceEndsCleanly: timeout(1) sends its signal to
// the command and again to its process group; the copy, arriving with
// the first, does not count as a second request (which would exit at
// once, without the clean end), a signal signalEcho later does.
func TestSignalDeliveredTwiceEndsCleanly(t *testing.T) {
	w := newSyncBuffer("")
	exited := make(chan int, 2)
	clock := newSignalClock()
	ctx, stop := interruptContextClock(w, func(code int) { exited <- code }, clock.now)
	defer stop()
	clock.kill(t, syscall.SIGTERM, exited)
	<-ctx.Done()
	clock.advance(signalEcho - time.Millisecond)
	clock.kill(t, syscall.SIGTERM, exited) // the copy: ignored
	clock.advance(time.Millisecond)
	clock.kill(t, syscall.SIGINT, exited) // a second request
	select {
	case code := <-exited:
		if code != exitFailure || strings.Count(w.String(), "again: exiting at once") != 1 || !strings.Contains(w.String(), "interrupt again") {
			t.Errorf("exit(%d), wrote %q; want one exit(1), for the interrupt", code, w.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second request did not exit")
	}
}

// TestSecondSignalEndsSlowShutdown: a pub whose broker stopped answering
// waits at the end of its input for the broker to acknowledge what it
// published (up to 5 s); interrupting it twice ends it at once, status 1.
func TestSecondSignalEndsSlowShutdown(t *testing.T) {
	logd := startChild(t, "logd listening on", "logd", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "")
	addr := regexp.MustCompile(`logd listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(logd.stderr.String())[1]
	pub := exec.Command(os.Args[0])
	pub.Env = append(os.Environ(), childArgs+"="+strings.Join([]string{"pub", "logd://" + addr + "/t"}, "\x1f"))
	stderr := newSyncBuffer("publishing to")
	pub.Stderr = stderr
	stdin, err := pub.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pub.Wait() }()
	t.Cleanup(func() {
		_ = pub.Process.Kill()
		<-done
	})
	<-stderr.seen
	if err := logd.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// 1 MiB of lines: once written, all but the pipe's buffer (64 KiB)
	// were read, and so published, with no broker to acknowledge them.
	if _, err := stdin.Write([]byte(strings.Repeat(strings.Repeat("x", 63)+"\n", 1<<14))); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	// A process cannot say that it took the first signal: interrupt it
	// until it exits.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		if err := pub.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			done <- err
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitFailure || !strings.Contains(stderr.String(), "brokerless: interrupt again: exiting at once") {
				t.Fatalf("exit %v; want status 1 from a second interrupt:\n%s", err, stderr)
			}
			return
		case <-tick.C:
		case <-deadline:
			t.Fatalf("pub still running 60s after interrupts:\n%s", stderr)
		}
	}
}
