package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// A contender that sends multicast with TTL 1 (libzmq's epgm, which
// refuses TTL 0, and raw multicast as its baseline) runs only inside a
// network namespace this benchmark makes: loopback alone, multicast on,
// 239.0.0.0/8 routed to it, so nothing it sends can leave the machine.
// Each of its measurements runs in a child process (this binary again,
// under ip netns exec), which reads a netnsJob on stdin and writes a
// netnsResult on stdout.
type netnsed interface{ inNetns() }

// netnsEnv names the namespace in the child's environment; a child
// finding it set runs the job (MaybeNetnsChild) and no multicast with
// TTL 1 is sent without it.
const netnsEnv = "BENCH_NETNS_CHILD"

var errNeedsNetns = errors.New("needs root to create a network namespace (multicast TTL 1 is only sent inside one)")

// rawMcastNS is raw multicast inside the namespace, TTL 1: libzmq-epgm's
// baseline, measured the same way.
type rawMcastNS struct{ rawMcast }

func (rawMcastNS) Name() string      { return "raw-mcast-ns" }
func (rawMcastNS) Can(Options) error { return netnsAvailable() }
func (rawMcastNS) inNetns()          {}

func (rawMcastNS) Open(_ context.Context, o Options) (Link, error) {
	if err := insideOurNetns(); err != nil {
		return nil, err
	}
	return openRawMcast(o, 1)
}

func insideOurNetns() error {
	if os.Getenv(netnsEnv) == "" {
		return errors.New("multicast with TTL 1 is sent only inside the benchmark's own network namespace")
	}
	return nil
}

// netnsAvailable says whether a namespace can be made here: root and ip.
func netnsAvailable() error {
	if os.Getenv(netnsEnv) != "" {
		return nil
	}
	if geteuid() != 0 {
		return fmt.Errorf("%w: %w", ErrUnavailable, errNeedsNetns)
	}
	if _, err := exec.LookPath(ipCmd); err != nil {
		return fmt.Errorf("%w: %w: no ip command (iproute2)", ErrUnavailable, errNeedsNetns)
	}
	// Root may still be refused one (a container without CAP_SYS_ADMIN):
	// try once.
	probeOnce.Do(func() {
		n := &netns{}
		if err := n.makeNamed(netnsName() + "-probe"); err != nil {
			probeErr = fmt.Errorf("%w: %w: %s", ErrUnavailable, errNeedsNetns, strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": "))
		}
		n.remove()
	})
	return probeErr
}

var (
	probeOnce sync.Once
	probeErr  error
)

// netns is the namespace of this process's run, made on first use.
type netns struct {
	once sync.Once
	name string
	err  error
}

func (n *netns) make() error { return n.makeNamed(netnsName()) }

func (n *netns) makeNamed(name string) error {
	n.once.Do(func() {
		n.name = name
		for _, args := range [][]string{
			{"netns", "add", n.name},
			{"netns", "exec", n.name, "ip", "link", "set", "lo", "up"},
			{"netns", "exec", n.name, "ip", "link", "set", "lo", "multicast", "on"},
			{"netns", "exec", n.name, "ip", "route", "add", "239.0.0.0/8", "dev", "lo"},
		} {
			if out, err := exec.Command(ipCmd, args...).CombinedOutput(); err != nil {
				n.err = fmt.Errorf("%w: ip %s: %v: %s", ErrUnavailable, strings.Join(args, " "), err, bytes.TrimSpace(out))
				if args[1] != "add" {
					n.remove()
				}
				n.name = ""
				return
			}
		}
	})
	return n.err
}

// remove deletes the namespace, if made.
func (n *netns) remove() {
	if n.name != "" {
		_ = exec.Command(ipCmd, "netns", "delete", n.name).Run()
	}
}

type netnsJob struct {
	Settings  Settings `json:"settings"`
	Contender string   `json:"contender"`
	Cell      Cell     `json:"cell"`
	Round     int      `json:"round"`
}

type netnsResult struct {
	Metrics map[string]float64     `json:"metrics"`
	Hist    *hdrhistogram.Snapshot `json:"hist,omitempty"`
	Err     string                 `json:"err,omitempty"`
}

// inNetns measures one round of c in a child process inside the
// namespace.
func (r *runner) inNetns(ctx context.Context, c Contender, cell Cell, round int) (outcome, error) {
	if err := r.ns.make(); err != nil {
		return outcome{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return outcome{}, err
	}
	job, err := json.Marshal(netnsJob{Settings: r.set, Contender: c.Name(), Cell: cell, Round: round})
	if err != nil {
		return outcome{}, err
	}
	cmd := exec.CommandContext(ctx, ipCmd, "netns", "exec", r.ns.name, self)
	cmd.Env = append(os.Environ(), netnsEnv+"="+r.ns.name)
	cmd.Stdin = bytes.NewReader(job)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return outcome{}, fmt.Errorf("child in network namespace %s: %v: %s", r.ns.name, err, bytes.TrimSpace(stderr.Bytes()))
	}
	// The result is the last line: OpenPGM writes warnings to stdout
	// before it ("Warn: Interface lo reports as a loopback device.").
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	var res netnsResult
	if err := json.Unmarshal(out, &res); err != nil {
		return outcome{}, fmt.Errorf("child in network namespace %s: %v: %.200q", r.ns.name, err, out)
	}
	if res.Err != "" {
		return outcome{}, errors.New(res.Err)
	}
	o := outcome{metrics: res.Metrics}
	if res.Hist != nil {
		o.hist = hdrhistogram.Import(res.Hist)
	}
	return o, nil
}

// MaybeNetnsChild, in a child process inside the benchmark's network
// namespace, measures the job on stdin, writes the result on stdout and
// exits; elsewhere it returns at once. The bench command (and a test
// binary running the matrix) calls it first thing.
func MaybeNetnsChild() {
	if os.Getenv(netnsEnv) == "" {
		return
	}
	var job netnsJob
	var res netnsResult
	if err := json.NewDecoder(os.Stdin).Decode(&job); err != nil {
		res.Err = err.Error()
	} else if c := netnsContender(job.Contender); c == nil {
		res.Err = "no contender " + job.Contender + " runs in the network namespace"
	} else {
		r := &runner{set: job.Settings}
		out, err := r.measure(context.Background(), c, job.Cell, job.Round)
		if err != nil {
			res.Err = err.Error()
		}
		res.Metrics = out.metrics
		if out.hist != nil {
			res.Hist = out.hist.Export()
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
}

func netnsContender(name string) Contender {
	for _, c := range Contenders() {
		if _, ok := c.(netnsed); ok && c.Name() == name {
			return c
		}
	}
	return nil
}

// geteuid is os.Geteuid and ipCmd iproute2's ip (a test pretends not
// to be root, or ip to fail).
var (
	geteuid = os.Geteuid
	ipCmd   = "ip"
)

// netnsName is this process's namespace.
func netnsName() string { return fmt.Sprintf("brokerless-bench-%d", os.Getpid()) }
