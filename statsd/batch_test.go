package statsd

import (
	"strings"
	"testing"
	"unsafe"
)

// TestBatchGivesBackBurstMemory: a TCP connection's batch keeps no
// more than a small buffer of metrics from one read to the next. A
// connection holds its batch while open, and one line of packed values (t:1:1:...|ms,
// 32,000 values in 64 KiB) would otherwise leave it holding some 3 MB:
// at MaxConns (1024) connections, 3 GB held for nothing.
func TestBatchGivesBackBurstMemory(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{})
	b := newConnBatch(false)
	line := "t" + strings.Repeat(":1", (DefaultMaxLineLength-4)/2) + "|ms\n"
	b.addPacket([]byte(line))
	if len(b.metrics) < 30000 {
		t.Fatalf("%d metrics parsed, want over 30000", len(b.metrics))
	}
	b.applyTo(a)
	if held := uintptr(cap(b.metrics)) * unsafe.Sizeof(Metric{}); held > keepBatchMetrics*unsafe.Sizeof(Metric{}) {
		t.Errorf("after the packet the batch holds %d metrics (%d bytes), want at most %d", cap(b.metrics), held, keepBatchMetrics)
	}
}
