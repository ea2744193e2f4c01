//go:build !unix

package store

import "time"

// processCPU is unknown here: the benchmarks report CPU per delivery as 0.
func processCPU() time.Duration { return 0 }
