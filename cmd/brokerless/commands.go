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
	return slices.Concat([]*command{&pubCmd, &subCmd, &pipeCmd, &mcastPubCmd, &mcastSubCmd, &mcastRecordCmd, &demoCmd, &demoArchiveCmd, &demoWebhookCmd, &logdCmd, &logdUserAddCmd, &logdUserRemoveCmd, &logdUserListCmd, &statsdCmd, &zmqProxyCmd, &zmqPushCmd, &zmqPullCmd}, webhookCmds, []*command{&helpURLsCmd, &versionCmd})
}

// lookup finds the command whose name is the longest run of leading
// words of args, and returns it with the arguments that follow. When the
// words after that name begin a longer command group ("logd user" after
// "logd"), it returns nil: the words name a group, not that command.
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
	if best != nil && len(rest) > 0 && len(group(strings.Join(args[:words+1], " "))) > 0 {
		return nil, nil
	}
	return best, rest
}

// groupPrefix is the longest run of leading words of args that prefixes
// a command group, and its length in words (0 when none does).
func groupPrefix(args []string) (string, int) {
	for n := len(args); n > 0; n-- {
		if p := strings.Join(args[:n], " "); len(group(p)) > 0 {
			return p, n
		}
	}
	return "", 0
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
