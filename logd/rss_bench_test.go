package logd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkRetainedRSS reports the resident memory of a logd process
// (this test binary in child mode) holding a given amount of data: after
// producing it, and after a restart over it. The amount is
// BROKERLESS_RETAIN_MIB (default 1024):
//
//	BROKERLESS_RETAIN_MIB=1024 go test -run XXX -bench RetainedRSS -benchtime 1x ./logd/
//	BROKERLESS_RETAIN_MIB=4096 go test -run XXX -bench RetainedRSS -benchtime 1x ./logd/
func BenchmarkRetainedRSS(b *testing.B) {
	mib := 1024
	if v := os.Getenv("BROKERLESS_RETAIN_MIB"); v != "" {
		mib, _ = strconv.Atoi(v)
	}
	dir, addr := b.TempDir(), freeAddr(b)
	child := startChild(b, dir, addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("rss"), kgo.AllowAutoTopicCreation())
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	ctx := context.Background()
	for i := 0; i < mib*1024; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	produced := rssMiB(b, child.Process.Pid)
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	child = startChild(b, dir, addr)
	restarted := rssMiB(b, child.Process.Pid)
	b.ReportMetric(float64(mib), "retained-MiB")
	b.ReportMetric(produced, "rss-after-produce-MiB")
	b.ReportMetric(restarted, "rss-after-restart-MiB")
	b.ReportMetric(0, "ns/op")
}

// rssMiB reads a process's resident set size.
func rssMiB(b *testing.B, pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
