package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// stdio is where a command reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// run dispatches args (without the program name) to a command and
// returns the exit status.
func run(ctx context.Context, args []string, std stdio) int {
	if len(args) == 0 {
		writeOverview(std.err)
		return exitUsage
	}
	switch cmd, _ := lookup(args); {
	case args[0] == "help" && len(args) > 1 && cmd == nil:
		// "help X" is "X --help", unless it names a command of its own
		// ("help urls").
		args = append(args[1:len(args):len(args)], "--help")
	case isHelp(args[0]) || args[0] == "help" && len(args) == 1:
		writeOverview(std.out)
		return exitOK
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		return unknown(args, std)
	}
	inv := &invocation{cmd: cmd, args: rest, stdio: std, log: newLogger(std.err)}
	return report(cmd, cmd.run(ctx, inv), std.err)
}

func isHelp(arg string) bool { return arg == "--help" || arg == "-h" }

// unknown explains why args name no command: an unknown word, or a
// command group such as "mcast" without (or with a wrong) subcommand.
func unknown(args []string, std stdio) int {
	prefix, n := groupPrefix(args)
	if n == 0 {
		fmt.Fprintf(std.err, "brokerless: unknown command %q\nRun 'brokerless help' for the list of commands.\n", args[0])
		return exitUsage
	}
	sub := group(prefix)
	if len(args) > n && isHelp(args[n]) {
		writeGroup(std.out, prefix, sub)
		return exitOK
	}
	if len(args) == n {
		fmt.Fprintf(std.err, "brokerless %s: missing subcommand\n\n", prefix)
	} else {
		fmt.Fprintf(std.err, "brokerless %s: unknown subcommand %q\n\n", prefix, args[n])
	}
	writeGroup(std.err, prefix, sub)
	return exitUsage
}

// report prints err, if any, and returns the exit status it calls for.
func report(cmd *command, err error, w io.Writer) int {
	var (
		usage *usageError
		line  *oneLineError
	)
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &line):
		fmt.Fprintf(w, "brokerless %s: %v\n", cmd.name, err)
		return exitUsage
	case errors.As(err, &usage):
		fmt.Fprintf(w, "brokerless %s: %v\nRun 'brokerless %s --help' for usage.\n", cmd.name, err, cmd.name)
		return exitUsage
	default:
		fmt.Fprintf(w, "brokerless %s: %s\n", cmd.name, strings.TrimSpace(err.Error()))
		return exitFailure
	}
}
