package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// signalEcho is how soon after the first SIGINT or SIGTERM another one
// is taken for the same signal delivered twice rather than a second
// request: timeout(1) sends its signal to the command and then to its
// own process group, which the command is in, so a command it wraps
// gets two at once.
const signalEcho = 250 * time.Millisecond

// interruptContext returns a context that ends at the first SIGINT or
// SIGTERM, so the command shuts down cleanly. A second one, at least
// signalEcho later, while that shutdown waits (for a broker's
// acknowledgements, a publisher's last repairs …), writes one line on w
// and calls exit(exitFailure): the way out when a clean end takes too
// long. stop stops listening.
func interruptContext(w io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	return interruptContextClock(w, exit, time.Now)
}

// interruptContextClock is interruptContext reading the time from now.
func interruptContextClock(w io.Writer, exit func(int), now func() time.Time) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first time.Time
		select {
		case <-sigs:
			first = now()
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case sig := <-sigs:
				if now().Sub(first) < signalEcho {
					continue
				}
				fmt.Fprintf(w, "brokerless: %v again: exiting at once, without finishing\n", sig)
				exit(exitFailure)
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
