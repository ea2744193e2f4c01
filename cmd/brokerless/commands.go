package main

import (
	"context"
	"slices"
	"strings"
)

// command is one entry of the command table: its name, its help and the
// function that runs it. A new subcommand is a file defining one command
// value plus a line in commands.
type command struct {
	// name is the words after "brokerless", e.g. "mcast pub".
	name string
	// summary is the one line shown in the command list.
	summary string
	// synopsis follows the name on the help's Usage line.
	synopsis string
	// about says what the command does, in a paragraph or two.
	about string
	// examples are command lines with a comment each, shown under
	// EXAMPLES.
	examples string
	run      func(ctx context.Context, inv *invocation) error
}

// commands lists every command in the order help shows them.
func commands() []*command {
	return []*command{&mcastPubCmd, &mcastSubCmd, &demoCmd, &logdCmd, &statsdCmd, &versionCmd}
}

// lookup finds the command whose name is the longest run of leading
// words of args, and returns it with the arguments that follow.
func lookup(args []string) (*command, []string) {
	var (
		best  *command
		rest  []string
		words int
	)
	for _, c := range commands() {
		name := strings.Fields(c.name)
		if len(name) > words && len(args) >= len(name) && slices.Equal(args[:len(name)], name) {
			best, rest, words = c, args[len(name):], len(name)
		}
	}
	return best, rest
}

// group lists the commands named prefix followed by more words, such as
// "mcast pub" and "mcast sub" for "mcast".
func group(prefix string) []*command {
	var cmds []*command
	for _, c := range commands() {
		if strings.HasPrefix(c.name, prefix+" ") {
			cmds = append(cmds, c)
		}
	}
	return cmds
}
