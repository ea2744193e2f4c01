//go:build unix

package latency

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process has used so
// far: benchmarks take it before and after a run to report CPU per
// operation beside their rates. It is 0 where the system cannot say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
