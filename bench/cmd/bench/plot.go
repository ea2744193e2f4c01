package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/brokerless/brokerless/bench/matrix"
)

// cmdPlot draws the plots of a results folder again from its
// results.json and its .hgrm files, without running anything.
func cmdPlot(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: bench plot DIR")
		return 2
	}
	rep, err := matrix.ReadJSON(filepath.Join(args[0], "results.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench plot:", err)
		return 1
	}
	if err := rep.WritePlots(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "bench plot:", err)
		return 1
	}
	return 0
}
