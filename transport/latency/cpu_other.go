//go:build !unix

package latency

import "time"

// ProcessCPU is 0 on systems without getrusage.
func ProcessCPU() time.Duration { return 0 }
