// Command bench measures brokerless's transports beside raw baselines
// and the peers a user would pick instead; see package matrix.
//
//	go run ./cmd/bench run [flags]        run the matrix, write results
//	go run ./cmd/bench compare OLD NEW    which differences are significant
//	go run ./cmd/bench plot DIR           redraw DIR's plots from its files
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/brokerless/brokerless/bench/matrix"
)

func main() {
	matrix.MaybeNetnsChild()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:])
	case "compare":
		return cmdCompare(args[1:])
	case "plot":
		return cmdPlot(args[1:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "bench: unknown command %q\n%s", args[0], usage)
	return 2
}

const usage = `usage:
  bench run [flags]          run the matrix; bench run -h lists the flags
  bench compare OLD.json NEW.json
                             benchstat-style: which figures changed significantly
  bench plot DIR             draw DIR's plots again from its results.json and hgrm/
`
