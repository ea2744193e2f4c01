package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

// writeOverview lists every command with its summary.
func writeOverview(w io.Writer) {
	fmt.Fprint(w, `brokerless sends messages straight from producers to consumers, without a
broker, and makes every loss visible.

Usage:
  brokerless <command> [flags]

Commands:
`)
	writeList(w, commands())
	fmt.Fprint(w, `
Run 'brokerless <command> --help' for a command's flags and examples.
`)
}

// groupAbout says what a command group is for, above its subcommands.
var groupAbout = map[string]string{"webhook": webhookAbout}

// writeGroup lists the subcommands of a command group such as "mcast".
func writeGroup(w io.Writer, prefix string, cmds []*command) {
	fmt.Fprintf(w, "Usage:\n  brokerless %s <subcommand> [flags]\n\n", prefix)
	if about := groupAbout[prefix]; about != "" {
		fmt.Fprintf(w, "%s\n\n", about)
	}
	fmt.Fprint(w, "Subcommands:\n")
	writeList(w, cmds)
	fmt.Fprintf(w, "\nRun 'brokerless %s <subcommand> --help' for its flags and examples.\n", prefix)
}

func writeList(w io.Writer, cmds []*command) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
}

// writeHelp prints a command's usage line, description, flags and
// examples.
func (c *command) writeHelp(w io.Writer, fs *pflag.FlagSet) {
	usage := strings.TrimSpace("brokerless " + c.name + " " + c.synopsis)
	fmt.Fprintf(w, "Usage:\n  %s\n\n%s\n", usage, strings.TrimSpace(c.about))
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nFLAGS:\n%s", fs.FlagUsages())
	}
	fmt.Fprintf(w, "\nEXAMPLES:\n%s\n", indent(strings.Trim(c.examples, "\n"), "  "))
}

func indent(s, by string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "\n")
}
