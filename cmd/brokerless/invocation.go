package main

import (
	"errors"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
)

// invocation is one run of a command: its arguments (after the command
// name), its standard streams and its logger.
type invocation struct {
	cmd  *command
	args []string
	stdio
	log *slog.Logger
}

// flags returns an empty flag set for the command; parse reads it.
func (inv *invocation) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet(inv.cmd.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.Usage = func() { inv.cmd.writeHelp(inv.out, fs) }
	return fs
}

// parse parses the command's arguments. It returns errHelpShown after
// printing the help for --help, and a usage error for anything wrong,
// including positional arguments, which no command takes.
func (inv *invocation) parse(fs *pflag.FlagSet) error {
	err := fs.Parse(inv.args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return errHelpShown
	case err != nil:
		return &usageError{err}
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseArgs is parse for a command that takes positional arguments, one
// per name (e.g. "URL"), given before or after the flags.
func (inv *invocation) parseArgs(fs *pflag.FlagSet, names ...string) ([]string, error) {
	err := fs.Parse(inv.args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return nil, errHelpShown
	case err != nil:
		return nil, &usageError{err}
	case fs.NArg() < len(names):
		return nil, usagef("missing %s: brokerless %s %s", names[fs.NArg()], inv.cmd.name, strings.Join(names, " "))
	case fs.NArg() > len(names):
		return nil, usagef("unexpected argument %q", fs.Arg(len(names)))
	}
	return fs.Args(), nil
}

// newLogger logs warnings and errors from the libraries (a clamped
// socket buffer, a failed send) as text on w.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
