//go:build !linux

package dispatch

import "time"

// serverCPU is unknown here: the benchmark reports the PostgreSQL
// server's CPU per delivery as 0.
func serverCPU(int) time.Duration { return 0 }
