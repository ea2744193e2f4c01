package matrix

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestMain lets this test binary be the child a run starts inside its
// network namespace.
func TestMain(m *testing.M) {
	MaybeNetnsChild()
	os.Exit(m.Run())
}

// libzmq's epgm runs with its baseline inside a network namespace the
// run makes (TTL 1 never leaves it) and deletes when it ends.
func TestEPGMInNetns(t *testing.T) {
	if err := netnsAvailable(); err != nil {
		if os.Getenv("BROKERLESS_INTEROP") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	set := tinySettings()
	set.Kinds = []Kind{Latency, PingPong}
	rep, err := Run(context.Background(), set, []Contender{rawMcastNS{}, libzmqEPGM{}}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range rep.Cells {
		for _, name := range []string{"raw-mcast-ns", "libzmq-epgm"} {
			rr := rep.Result(name, cell.ID())
			if rr == nil || rr.Status != "ok" || rr.Summary["p50"].Median <= 0 || rep.hists[name+"|"+cell.ID()] == nil {
				t.Errorf("%s %s: %+v", name, cell.ID(), rr)
			}
		}
		if rr := rep.Result("libzmq-epgm", cell.ID()); rr != nil && rr.VsBaseline == nil {
			t.Errorf("libzmq-epgm %s: no ratio to raw-mcast-ns", cell.ID())
		}
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), netnsName()) {
		t.Errorf("namespace %s left behind: %s", netnsName(), out)
	}
}

// Without root, the contenders say why they do not run.
func TestNetnsNeedsRoot(t *testing.T) {
	defer func(f func() int) { geteuid = f }(geteuid)
	geteuid = func() int { return 1000 }
	for _, c := range []Contender{rawMcastNS{}, libzmqEPGM{}} {
		err := c.Can(Options{})
		if !errors.Is(err, ErrUnavailable) || err.Error() != "not available: needs root to create a network namespace (multicast TTL 1 is only sent inside one)" {
			t.Errorf("%s: %v", c.Name(), err)
		}
	}
	// Outside the namespace, they refuse to open (no TTL 1 on the host).
	if _, err := (libzmqEPGM{}).Open(context.Background(), Options{Subscribers: 1}); err == nil {
		t.Error("libzmq-epgm opened outside the benchmark's namespace")
	}
}

// Root refused a namespace (a container without CAP_SYS_ADMIN): the
// contenders are not available, with ip's complaint.
func TestNetnsRefused(t *testing.T) {
	defer func(f func() int, ip string) { geteuid, ipCmd, probeOnce, probeErr = f, ip, sync.Once{}, nil }(geteuid, ipCmd)
	geteuid, ipCmd, probeOnce = func() int { return 0 }, "false", sync.Once{}
	err := (libzmqEPGM{}).Can(Options{})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errNeedsNetns) || !strings.Contains(err.Error(), "ip netns add") {
		t.Errorf("libzmq-epgm with ip failing: %v", err)
	}
}
