package latency

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessCPU: CPU spent spinning shows in ProcessCPU, which never
// goes back.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no getrusage here")
	}
	before := ProcessCPU()
	for start := time.Now(); time.Since(start) < 10*time.Second; {
		now := ProcessCPU()
		if now < before {
			t.Fatalf("ProcessCPU went back from %v to %v", before, now)
		}
		if now-before >= 20*time.Millisecond {
			return
		}
	}
	t.Fatalf("10 s of spinning, ProcessCPU still within 20 ms of %v", before)
}
