package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/brokerless/brokerless/bench/matrix"
)

func cmdCompare(args []string) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var o matrix.CompareOptions
	fs.Float64Var(&o.Alpha, "alpha", 0.05, "significance level of the U test")
	fs.Float64Var(&o.MinChange, "min-change", 0.05, "smallest relative change flagged")
	fs.BoolVar(&o.All, "all", false, "compare every metric (p90, p99, …), not only each cell's headline")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: bench compare [-alpha 0.05] [-min-change 0.05] [-all] OLD.json NEW.json")
		return 2
	}
	if o.Alpha <= 0 || o.Alpha >= 1 || o.MinChange < 0 {
		fmt.Fprintln(os.Stderr, "bench compare: -alpha must be in (0, 1) and -min-change ≥ 0")
		return 2
	}
	old, err := matrix.ReadJSON(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench compare:", err)
		return 1
	}
	cur, err := matrix.ReadJSON(fs.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench compare:", err)
		return 1
	}
	matrix.WriteComparison(os.Stdout, matrix.Compare(old, cur, o), o)
	return 0
}
