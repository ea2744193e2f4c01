package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// interruptContext returns a context that ends at the first SIGINT or
// SIGTERM, so the command shuts down cleanly. A second one, while that
// shutdown waits (for a broker's acknowledgements, a publisher's last
// repairs …), writes one line on w and calls exit(exitFailure): the way
// out when a clean end takes too long. stop stops listening.
func interruptContext(w io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(w, "brokerless: %v again: exiting at once, without finishing\n", sig)
			exit(exitFailure)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
