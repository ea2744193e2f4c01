package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/zmq"
)

var zmqPushCmd = command{
	name:     "zmq push",
	summary:  "hand tasks to ZeroMQ workers, each to exactly one, round-robin, redelivering a lost worker's",
	synopsis: "--bind ADDR | --connect ADDR [--count N] [--topic T] [--workers N] [flags]",
	about: `
A load balancer: each line of standard input (or, with --count N, each of
N generated tasks "task 1" … "task N") is one task, handed to exactly one
of the workers connected, round-robin among those ready for more. A
worker says when it is done with a task; the tasks of a worker that
disconnects before saying so are handed to another, first. Workers are
'brokerless zmq pull', or any libzmq REQ or DEALER socket speaking the
protocol of transport/zmq.Balancer (send "ready", receive [topic, header,
payload], send ["done", header]).

Tasks wait, in memory, for a worker to be ready. Once the input ends it
waits until every task is done, then exits; interrupted (SIGINT,
SIGTERM), it stops at once and says how many were not done. --workers N
waits for N workers to be ready before the first task, so the first
tasks are spread too.

ADDR is tcp://HOST:PORT (PORT 0 for any free one), HOST:PORT, or
ipc://PATH; each flag may be repeated. It prints where it listens on
start and its counters at the end, on standard error.`,
	examples: `
# 1000 tasks for the workers that connect to port 5557, once 3 are ready.
brokerless zmq push --bind tcp://*:5557 --count 1000 --workers 3

# One task per line of a file.
brokerless zmq push --bind 127.0.0.1:5557 < jobs.txt

# A worker, in another terminal.
brokerless zmq pull --connect 127.0.0.1:5557`,
	run: runZmqPush,
}

func runZmqPush(ctx context.Context, inv *invocation) error {
	var (
		bind, connect []string
		count         int
		workers       int
		topic         string
	)
	fs := inv.flags()
	fs.StringArrayVar(&bind, "bind", nil, "listen for workers on ADDR (repeatable)")
	fs.StringArrayVar(&connect, "connect", nil, "connect to workers that bind ADDR, redialling with backoff (repeatable)")
	fs.IntVar(&count, "count", 0, `generate N tasks, "task 1" … "task N", instead of reading standard input`)
	fs.StringVar(&topic, "topic", "", "the topic of every task")
	fs.IntVar(&workers, "workers", 0, "wait for this many workers to be ready before the first task")
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
		return needEndpoint("bind", "connect")
	case count < 0:
		return usagef("--count %d: want a positive number", count)
	case fs.Changed("count") && count == 0:
		return usagef("--count 0: want a positive number")
	case workers < 0:
		return usagef("--workers %d: want a positive number", workers)
	}
	b, err := zmq.NewBalancer(ctx, cfg)
	if err != nil {
		return zmqConfigError(err, map[string][]string{"bind": cfg.Bind, "connect": cfg.Connect}, nil)
	}
	if len(cfg.Bind) > 0 {
		fmt.Fprintf(inv.err, "push: workers connect to %s\n", zmqAddrs(b.Addrs()))
	}
	if len(cfg.Connect) > 0 {
		fmt.Fprintf(inv.err, "push: connecting to workers at %s\n", strings.Join(cfg.Connect, ", "))
	}
	n, err := pushTasks(ctx, inv, b, count, workers, topic)
	if ctx.Err() != nil {
		err = nil // interrupted: a normal end
	}
	st := b.Stats()
	b.Close()
	left := st.Published - st.Completed
	fmt.Fprintf(inv.err, "push: %d tasks, %d done, %d not done; %d handed again after their worker left; %d workers connected\n",
		n, st.Completed, left, st.Redelivered, st.Workers)
	if err == nil && left > 0 && ctx.Err() == nil {
		err = fmt.Errorf("%d tasks not done", left)
	}
	return err
}

// pushTasks publishes the tasks and waits until they are done.
func pushTasks(ctx context.Context, inv *invocation, b *zmq.Balancer, count, workers int, topic string) (uint64, error) {
	if workers > 0 {
		fmt.Fprintf(inv.err, "push: waiting for %d workers\n", workers)
		if err := b.WaitReady(ctx, workers); err != nil {
			return 0, err
		}
	}
	var (
		n   uint64
		err error
	)
	if count > 0 {
		n, err = generateTasks(ctx, b, count, topic)
	} else {
		n, err = publishLines(ctx, b, inv.in, topic, 0)
	}
	if err != nil {
		return n, err
	}
	return n, b.Flush(ctx)
}

// generateTasks publishes "task 1" … "task count".
func generateTasks(ctx context.Context, pub transport.Publisher, count int, topic string) (uint64, error) {
	var n uint64
	for i := 1; i <= count; i++ {
		if err := pub.Publish(ctx, transport.Message{Topic: topic, Payload: strconv.AppendInt([]byte("task "), int64(i), 10)}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
