package logd

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/logd/storage"
)

// The crash test runs logd in a child process (this test binary again)
// so that it can be killed with SIGKILL.
const envChild = "BROKERLESS_LOGD_CHILD" // data dir and listen address, "dir|addr"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envChild); spec != "" {
		os.Exit(runChild(spec))
	}
	if spec := os.Getenv(envBenchClient); spec != "" {
		os.Exit(runBenchClient(spec))
	}
	if spec := os.Getenv(envBenchFetcher); spec != "" {
		os.Exit(runBenchFetcher(spec))
	}
	os.Exit(m.Run())
}

func runChild(spec string) int {
	dir, addr, _ := strings.Cut(spec, "|")
	srv, err := New(Config{Storage: storage.Config{Dir: dir}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_ = srv.Serve(ln)
	return 0
}

// startChild starts logd in a child process and waits until it listens.
func startChild(t testing.TB, dir, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+dir+"|"+addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child logd: %q %v", line, err)
	}
	return cmd
}

// TestCrashLoop: produce with acks=all while logd is killed with SIGKILL
// at random moments, 20 times, each once the cycle has acknowledged a
// random number of records (at least one). Every acknowledged record
// must be there afterwards exactly once and in order, and nothing
// corrupt is served.
func TestCrashLoop(t *testing.T) {
	cycles := 20
	if testing.Short() {
		cycles = 5
	}
	dir, addr := t.TempDir(), freeAddr(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var acked []string
	var perCycle []int
	for cycle := 0; cycle < cycles; cycle++ {
		child := startChild(t, dir, addr)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("crash"), kgo.AllowAutoTopicCreation(),
			kgo.RecordRetries(3), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var cycleAcked []string
		// Kill once a random number of records were acknowledged, then a
		// random moment later: every cycle must acknowledge something, or
		// it proves nothing.
		target := 1 + rng.IntN(3000)
		reached := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				v := fmt.Sprintf("c%02d-%06d", cycle, i)
				cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
					if err == nil {
						mu.Lock()
						cycleAcked = append(cycleAcked, v)
						if len(cycleAcked) == target {
							close(reached)
						}
						mu.Unlock()
					}
				})
			}
		}()
		select {
		case <-reached:
		case <-time.After(60 * time.Second):
			mu.Lock()
			n := len(cycleAcked)
			mu.Unlock()
			t.Fatalf("cycle %d: %d records acknowledged in 60 s, want %d before the kill", cycle, n, target)
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond) // a random moment, not an event to wait for
		_ = child.Process.Signal(syscall.SIGKILL)
		_ = child.Wait()
		cancel()
		<-done
		cl.Close() // fails what was not acknowledged
		mu.Lock()
		if len(cycleAcked) < target {
			t.Fatalf("cycle %d acknowledged %d records, fewer than the %d it waited for", cycle, len(cycleAcked), target)
		}
		perCycle = append(perCycle, len(cycleAcked))
		// Promises may complete out of order across partitions; there is
		// one partition, so they complete in order.
		acked = append(acked, cycleAcked...)
		mu.Unlock()
	}

	startChild(t, dir, addr)
	c := newClient(t, addr, kgo.ConsumeTopics("crash"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	end := listEnd(t, c, "crash")
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for int64(len(got)) < end {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(got), end)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch: %v", fe.Err)
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	pos := map[string]int{}
	for i, v := range got {
		if _, dup := pos[v]; dup {
			t.Fatalf("%q stored twice", v)
		}
		if len(v) != len("c00-000000") || v[0] != 'c' {
			t.Fatalf("record %d is not one we produced: %q", i, v)
		}
		pos[v] = i
	}
	last := -1
	for _, v := range acked {
		p, ok := pos[v]
		if !ok {
			t.Fatalf("acknowledged %q lost (%d acknowledged, %d stored)", v, len(acked), len(got))
		}
		if p < last {
			t.Fatalf("acknowledged %q out of order", v)
		}
		last = p
	}
	t.Logf("%d cycles: %d acknowledged (per cycle %v), %d stored", cycles, len(acked), perCycle, len(got))
}

// listEnd is a partition's end offset, through ListOffsets.
func listEnd(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		off, err := kafkaEnd(ctx, cl, topic)
		if err == nil {
			return off
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no end offset")
	return 0
}

func kafkaEnd(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	req := newListOffsets(topic)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, fmt.Errorf("error %d", p.ErrorCode)
	}
	return p.Offset, nil
}
