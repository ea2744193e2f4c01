package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSubLogsTransportWarnings: sub gives the transport it opens by URL
// its stderr logger, so what the transport warns of reaches the user: a
// multicast receive buffer the kernel clamps (logd:// and kafka://
// brokers that go away: sub_broker_down_test.go).
func TestSubLogsTransportWarnings(t *testing.T) {
	limit, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Skipf("no rmem_max to exceed: %v", err)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(limit))); err != nil || n >= 1<<30 {
		t.Skipf("rmem_max %q: a 1 GiB buffer may not be clamped", limit)
	}
	group := fmt.Sprintf("239.255.%d.%d:%d", rand.IntN(256), 1+rand.IntN(254), 20000+rand.IntN(12768))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var out, errOut strings.Builder
	run(ctx, []string{"sub", "mcast://" + group + "?ttl=0&rcvbuf=1073741824"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	if !strings.Contains(errOut.String(), "kernel clamped the receive buffer") {
		t.Fatalf("sub's stderr does not say the kernel clamped the receive buffer:\n%s", errOut.String())
	}
}
