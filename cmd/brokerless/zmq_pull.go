package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/zmq"
)

var zmqPullCmd = command{
	name:     "zmq pull",
	summary:  "a ZeroMQ worker: takes tasks from 'zmq push' balancers, prints each, then says it is done",
	synopsis: "--connect ADDR | --bind ADDR [--credit N] [--count N] [--work DURATION]",
	about: `
A worker of 'brokerless zmq push' (transport/zmq.Balancer): it asks for
--credit tasks at a time, prints each on standard output as one line,
"<seq> <topic> <payload>" (the topic "-" when empty, the payload in
hexadecimal unless it is printable text), and once the line is written
tells the balancer the task is done and asks for the next. A task it
received and had not finished when it stops, or when its connection
drops, the balancer hands to another worker: each task is printed by one
worker at least once, and exactly once unless a worker stops between
printing a task and saying so.

--work DURATION pretends each task takes that long (between printing and
saying it is done). It runs until interrupted, or until it has done
--count tasks. It prints its counters at the end, on standard error.

ADDR is tcp://HOST:PORT, HOST:PORT, or ipc://PATH; each flag may be
repeated; connected addresses are redialled with backoff.`,
	examples: `
# Take tasks from the balancer on this machine's port 5557.
brokerless zmq pull --connect 127.0.0.1:5557

# Hold 10 tasks at a time, stop after 100.
brokerless zmq pull --connect tcp://10.0.0.5:5557 --credit 10 --count 100

# A slow worker, to watch the others take more.
brokerless zmq pull --connect 127.0.0.1:5557 --work 200ms`,
	run: runZmqPull,
}

func runZmqPull(ctx context.Context, inv *invocation) error {
	var (
		bind, connect []string
		credit, count int
		work          time.Duration
	)
	fs := inv.flags()
	fs.StringArrayVar(&connect, "connect", nil, "take tasks from the balancer at ADDR (repeatable)")
	fs.StringArrayVar(&bind, "bind", nil, "listen on ADDR for balancers that connect (repeatable)")
	fs.IntVar(&credit, "credit", 1, fmt.Sprintf("tasks held at once (1..%d)", zmq.MaxCredit))
	fs.IntVar(&count, "count", 0, "exit once this many tasks are done (default: run until interrupted)")
	fs.DurationVar(&work, "work", 0, "pretend each task takes this long")
	if err := inv.parse(fs); err != nil {
		return err
	}
	var cfg zmq.Config
	var err error
	if cfg.Bind, err = zmqEndpoints("bind", bind); err != nil {
		return err
	}
	if cfg.Connect, err = zmqEndpoints("connect", connect); err != nil {
		return err
	}
	switch {
	case len(bind)+len(connect) == 0:
		return needEndpoint("connect", "bind")
	case credit < 1 || credit > zmq.MaxCredit:
		return usagef("--credit %d: want 1..%d", credit, zmq.MaxCredit)
	case count < 0 || fs.Changed("count") && count == 0:
		return usagef("--count %d: want a positive number", count)
	case work < 0:
		return usagef("--work %v: want a positive duration", work)
	}
	cfg.Credit = credit
	w, err := zmq.NewWorker(ctx, cfg)
	if err != nil {
		return zmqConfigError(err, map[string][]string{"bind": cfg.Bind, "connect": cfg.Connect}, map[string]string{"Credit": "credit"})
	}
	if len(cfg.Bind) > 0 {
		fmt.Fprintf(inv.err, "pull: balancers connect to %s\n", zmqAddrs(w.Addrs()))
	}
	if len(cfg.Connect) > 0 {
		fmt.Fprintf(inv.err, "pull: taking tasks from %s, %d at a time\n", strings.Join(cfg.Connect, ", "), credit)
	}
	n, err := pullTasks(ctx, inv, w, count, work)
	if ctx.Err() != nil {
		err = nil // interrupted: a normal end
	}
	w.Close()
	fmt.Fprintf(inv.err, "pull: %d tasks done\n", n)
	return err
}

// pullTasks prints each task, then acknowledges it, until count tasks
// (0: no limit) or the end of ctx.
func pullTasks(ctx context.Context, inv *invocation, w *zmq.Worker, count int, work time.Duration) (int, error) {
	out := bufio.NewWriter(inv.out)
	var (
		line []byte
		n    int
	)
	for count == 0 || n < count {
		ev, err := w.Receive(ctx)
		if err != nil {
			if errors.Is(err, transport.ErrClosed) {
				err = nil
			}
			return n, err
		}
		if ev.Kind != transport.EventMessage {
			continue
		}
		m := &ev.Message
		line = appendLine(line[:0], m)
		out.Write(line)
		if err := out.Flush(); err != nil {
			return n, err
		}
		if work > 0 {
			select {
			case <-time.After(work):
			case <-ctx.Done():
				return n, ctx.Err()
			}
		}
		if err := w.Ack(ctx, m.Stream, m.Seq); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
