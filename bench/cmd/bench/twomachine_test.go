package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/bench/matrix"
)

// TestTwoMachines runs both sides of two-machine mode through the CLI
// (bench run -role sub, bench run -role pub) on 127.0.0.1, and checks
// the JSON says two-machine mode, raw-udp, raw-tcp and zmq measured
// throughput and round trips, and the others say why they did not run.
func TestTwoMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("two-machine run: not with -short")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	control := ln.Addr().String()
	ln.Close()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	subCode := -1
	go func() {
		defer wg.Done()
		subCode = run(ctx, []string{"run", "-role", "sub", "-listen", control})
	}()
	dir := t.TempDir()
	code := run(context.Background(), []string{"run", "-role", "pub", "-connect", control, "-smoke", "-quiet", "-out", dir})
	stop()
	wg.Wait()
	if code != 0 || subCode != 0 {
		t.Fatalf("bench run -role pub: exit status %d; -role sub: %d", code, subCode)
	}
	rep, err := matrix.ReadJSON(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Mode, "two-machine:") {
		t.Errorf("mode %q, want two-machine", rep.Mode)
	}
	table, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "two-machine") {
		t.Error("the table does not say two-machine mode")
	}
	remote := map[string]bool{"raw-udp": true, "raw-tcp": true, "zmq": true}
	for _, c := range rep.Contenders {
		for _, cell := range rep.Cells {
			rr := rep.Result(c.Name, cell.ID())
			switch {
			case rr == nil:
				t.Errorf("%s %s: no result", c.Name, cell.ID())
			case remote[c.Name]:
				h := rr.Summary[cell.Kind.Headline().Name]
				if rr.Status != "ok" || h.N != rep.Settings.Rounds || h.Median <= 0 {
					t.Errorf("%s %s: %s, headline %+v", c.Name, cell.ID(), rr.Status, h)
				}
			case !strings.HasPrefix(rr.Status, "not available in two-machine mode: "):
				t.Errorf("%s %s: status %q", c.Name, cell.ID(), rr.Status)
			}
		}
	}
	if len(rep.Cells) != 2 {
		t.Errorf("cells %v, want throughput and pingpong", rep.Cells)
	}
}
