package storage

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// envKillChild makes the test binary run killChild instead of the tests:
// the process TestKillRecovery SIGKILLs.
const envKillChild = "LOGD_STORAGE_KILL_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envKillChild); dir != "" {
		if err := killChild(dir, os.Getenv("LOGD_STORAGE_KILL_CYCLE")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

const killWorkers = 4

// killChild appends from several goroutines under FsyncAlways until it
// is killed, printing "ack <base> <count> <value prefix>" once each
// batch is durable.
func killChild(dir, cycle string) error {
	s, err := Open(Config{Dir: dir, SegmentBytes: 64 << 10, IndexIntervalBytes: 1024, MaintenanceInterval: -1})
	if err != nil {
		return err
	}
	if err := s.CreateTopic("t", 1, TopicConfig{}); err != nil && !strings.Contains(err.Error(), "exists") {
		return err
	}
	l, err := s.Partition("t", 0)
	if err != nil {
		return err
	}
	var out sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	errs := make(chan error, killWorkers)
	for id := range killWorkers {
		go func() {
			for seq := 0; ; seq++ {
				n := 1 + seq%8
				prefix := fmt.Sprintf("c%s-w%d-s%d", cycle, id, seq)
				spec := batchSpec{ts: time.Now().UnixMilli(), pid: -1, epoch: -1, firstSeq: -1}
				for j := range n {
					spec.recs = append(spec.recs, rec{value: fmt.Appendf(nil, "%s-%d-%s", prefix, j, strings.Repeat("p", 100*j))})
				}
				res, err := l.Append(makeBatch(tb{}, spec))
				if err == nil {
					err = l.WaitDurable(context.Background(), res.LastOffset)
				}
				if err != nil {
					errs <- err
					return
				}
				out.Lock()
				fmt.Fprintf(w, "ack %d %d %s\n", res.BaseOffset, n, prefix)
				w.Flush()
				out.Unlock()
			}
		}()
	}
	return <-errs
}

// tb lets makeBatch run outside a test; its batches never fail to build.
type tb struct{ testing.TB }

func (tb) Helper()                   {}
func (tb) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (tb) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

type ack struct {
	base   int64
	n      int
	prefix string
}

// TestKillRecovery appends with FsyncAlways in a child process, SIGKILLs
// it at a random moment, reopens, and checks that every acknowledged
// batch is there exactly once, in order, at its offsets, uncorrupted —
// over many cycles on the same directory.
func TestKillRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var acks []ack
	const cycles = 24
	for cycle := range cycles {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envKillChild+"="+dir, "LOGD_STORAGE_KILL_CYCLE="+strconv.Itoa(cycle))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		killAfter := 1 + rng.IntN(400)
		seen := 0
		for sc.Scan() {
			var a ack
			if _, err := fmt.Sscanf(sc.Text(), "ack %d %d %s", &a.base, &a.n, &a.prefix); err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			acks = append(acks, a)
			if seen++; seen == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("cycle %d: child ended without being killed: %v", cycle, err)
		}
		checkAcked(t, dir, acks)
	}
	t.Logf("%d cycles, %d acknowledged batches", cycles, len(acks))
}

// checkAcked reopens the store and checks the acknowledged batches.
func checkAcked(t *testing.T, dir string, acks []ack) {
	t.Helper()
	s, l := openPartition(t, Config{Dir: dir, SegmentBytes: 64 << 10, IndexIntervalBytes: 1024, MaintenanceInterval: -1})
	defer s.Close()
	recs := readAll(t, l, 0) // decodes and CRC-checks every batch
	byValue := make(map[string]int64, len(recs))
	for i, r := range recs {
		if r.offset != int64(i) {
			t.Fatalf("offset %d at position %d: not contiguous", r.offset, i)
		}
		v := string(r.value)
		if _, dup := byValue[v]; dup {
			t.Fatalf("value %q appears twice", v)
		}
		byValue[v] = r.offset
	}
	for _, a := range acks {
		for j := range a.n {
			v := fmt.Sprintf("%s-%d-%s", a.prefix, j, strings.Repeat("p", 100*j))
			off, ok := byValue[v]
			if !ok {
				t.Fatalf("acknowledged record %s-%d (offset %d) lost", a.prefix, j, a.base+int64(j))
			}
			if off != a.base+int64(j) {
				t.Fatalf("acknowledged record %s-%d at offset %d, acknowledged at %d", a.prefix, j, off, a.base+int64(j))
			}
		}
	}
}
