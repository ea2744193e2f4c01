package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/brokerless/brokerless/bench/matrix"
)

func cmdRun(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.Bool("smoke", false, "every scenario on small settings (CI's smoke run); other flags change them")
	out := fs.String("out", "results", "folder for table.md, results.json, hgrm/ and the plots")
	quiet := fs.Bool("quiet", false, "no progress bar")
	verbose := fs.Bool("v", false, "log each measurement and how long it took, instead of the progress bar")
	role := fs.String("role", "", "two-machine mode: sub (listens on -listen and answers the pub side) or pub (connects to -connect and measures); empty: one machine")
	listen := fs.String("listen", "", "-role sub: control address to listen on, host:port (its data sockets listen on the same host)")
	connect := fs.String("connect", "", "-role pub: the sub side's control address, host:port")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runUsage)
		fs.PrintDefaults()
	}
	set := matrix.FullSettings()
	// -smoke picks the defaults the other flags then change, so it is
	// looked for before they are parsed.
	for _, a := range args {
		if a == "-smoke" || a == "--smoke" || a == "-smoke=true" || a == "--smoke=true" {
			set = matrix.SmokeSettings()
		}
	}
	fs.IntVar(&set.Rounds, "rounds", set.Rounds, "measured rounds")
	fs.IntVar(&set.Warmup, "warmup", set.Warmup, "warm-up rounds, discarded")
	fs.IntVar(&set.Size, "size", set.Size, "payload bytes of every scenario but the throughput sweep")
	fs.Float64Var(&set.StartRate, "start-rate", set.StartRate, "throughput search: first rate probed, msgs/s")
	fs.Float64Var(&set.MaxRate, "max-rate", set.MaxRate, "throughput search: highest rate probed, msgs/s")
	fs.IntVar(&set.MaxProbes, "max-probes", set.MaxProbes, "throughput search: probes per search")
	fs.DurationVar(&set.ProbeTime, "probe-time", set.ProbeTime, "throughput search: how long each probe sends")
	fs.DurationVar(&set.SustainedProbeTime, "sustained-probe-time", set.SustainedProbeTime, "throughput search: shortest probe of raw UDP and the StatsD servers, whose socket buffers would absorb a short one")
	fs.DurationVar(&set.LatencyTime, "latency-time", set.LatencyTime, "how long each latency run sends")
	fs.IntVar(&set.PingPongs, "pingpongs", set.PingPongs, "round trips per ping-pong run")
	fs.Float64Var(&set.LossRate, "loss-rate", set.LossRate, "rate of the loss runs, msgs/s")
	fs.DurationVar(&set.LossTime, "loss-time", set.LossTime, "how long each loss run sends")
	fs.DurationVar(&set.LossQuiet, "loss-quiet", set.LossQuiet, "how long a loss run waits for a missing message once all are sent")
	fs.Int64Var(&set.Seed, "seed", set.Seed, "seed of injected loss")
	listFlag(fs, "scenarios", "scenarios, of "+kindNames(), &set.Kinds, func(s string) (matrix.Kind, error) { return matrix.Kind(s), nil })
	listFlag(fs, "sizes", "throughput sweep payload sizes, bytes", &set.Sizes, strconv.Atoi)
	listFlag(fs, "fanout", "fan-out subscriber counts", &set.FanOut, strconv.Atoi)
	listFlag(fs, "rates", "latency rates, msgs/s", &set.Rates, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	listFlag(fs, "losses", "injected loss fractions", &set.Losses, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	listFlag(fs, "contenders", "run only these contenders (and their baselines)", &set.Contenders, func(s string) (string, error) { return s, nil })
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench run: unexpected argument %q\n", fs.Arg(0))
		return 2
	}

	switch {
	case *role == "sub" && *listen == "", *role == "pub" && *connect == "":
		fmt.Fprintf(os.Stderr, "bench run: -role %s needs -%s host:port\n", *role, map[string]string{"sub": "listen", "pub": "connect"}[*role])
		return 2
	case *role != "" && *role != "sub" && *role != "pub":
		fmt.Fprintf(os.Stderr, "bench run: -role %q: want pub or sub\n", *role)
		return 2
	case *role != "sub" && *listen != "", *role != "pub" && *connect != "":
		fmt.Fprintln(os.Stderr, "bench run: -listen goes with -role sub, -connect with -role pub")
		return 2
	}
	if *role == "sub" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench run:", err)
			return 2
		}
		fmt.Printf("bench sub: control listening on %s; data sockets listen on the address the pub side reaches it at; stop with Ctrl-C\n", ln.Addr())
		if err := matrix.ServeSub(ctx, ln); err != nil {
			fmt.Fprintln(os.Stderr, "bench run:", err)
			return 1
		}
		return 0
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench run:", err)
		return 1
	}
	var progress matrix.Progress
	if *verbose {
		last, lastWhat := time.Now(), ""
		progress = func(done, total int, what string) {
			if lastWhat != "" {
				fmt.Fprintf(os.Stderr, "%4d/%d %-70s %v\n", done, total, lastWhat, time.Since(last).Round(time.Millisecond))
			}
			last, lastWhat = time.Now(), what
		}
	} else if !*quiet {
		var bar *progressbar.ProgressBar
		progress = func(done, total int, what string) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowCount(),
					progressbar.OptionSetWidth(30), progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true),
					progressbar.OptionClearOnFinish())
			}
			bar.Describe(fmt.Sprintf("%-60.60s", what))
			_ = bar.Set(done)
			if done == total {
				_ = bar.Finish()
			}
		}
	}
	requirePeers := os.Getenv("BROKERLESS_INTEROP") == "1"
	var rep *matrix.Report
	var err error
	if *role == "pub" {
		rep, err = matrix.RunPub(ctx, set, *connect, progress)
	} else {
		rep, err = matrix.Run(ctx, set, matrix.Contenders(), requirePeers, progress)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench run:", err)
		return 1
	}
	if err := rep.WriteAll(*out); err != nil {
		fmt.Fprintln(os.Stderr, "bench run:", err)
		return 1
	}
	rep.WriteTable(os.Stdout)
	fmt.Printf("\nWrote %s (table.md, results.json, hgrm/, plots) in %s.\n", *out, time.Since(rep.Started).Round(time.Second))
	return 0
}

const runUsage = `usage: bench run [flags]

One machine (default): every contender, publishers and subscribers in
this process over loopback.

  bench run                         the full matrix (about 15 minutes), into ./results
  bench run -smoke -out /tmp/r      every scenario on small settings
  bench run -contenders zmq -scenarios latency,pingpong

Two machines: the sub side listens for the pub side's control connection;
the pub side drives every scenario that runs across machines (throughput
counted by the sub side, round trips by ping-pong: no clock sync) for
raw-udp, raw-tcp and zmq; the other contenders say why not.

  machineB$ bench run -role sub -listen 10.0.0.2:7000
  machineA$ bench run -role pub -connect 10.0.0.2:7000 -out results-2m

Flags:
`

func kindNames() string {
	var s []string
	for _, k := range matrix.AllKinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ",")
}

// listFlag is a comma-separated flag that replaces *dst.
func listFlag[T any](fs *flag.FlagSet, name, usage string, dst *[]T, parse func(string) (T, error)) {
	fs.Func(name, usage+" (comma-separated)", func(s string) error {
		var v []T
		for _, f := range strings.Split(s, ",") {
			x, err := parse(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			v = append(v, x)
		}
		*dst = v
		return nil
	})
}
