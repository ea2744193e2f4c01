package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/brokerless/brokerless/logd/auth"
)

var logdUserListCmd = command{
	name:     "logd user list",
	summary:  "list the users of a logd users file, their mechanisms and grants",
	synopsis: "--file FILE",
	about: `
Lists the users of a users file: how each may authenticate (SCRAM
mechanisms, and PLAIN checked against them; or a client certificate
only) and what each is allowed. It shows no secret.`,
	examples: `
brokerless logd user list --file users.json`,
	run: runLogdUserList,
}

func runLogdUserList(_ context.Context, inv *invocation) error {
	fs := inv.flags()
	file := fs.String("file", "", "users file (required)")
	if err := inv.parse(fs); err != nil {
		return err
	}
	if *file == "" {
		return usagef("--file is required")
	}
	users, err := auth.Load(*file)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(inv.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tAUTHENTICATES WITH\tALLOWED")
	for _, u := range users.List() {
		mechs := slices.Sorted(maps.Keys(u.SCRAM))
		how := "client certificate"
		if len(mechs) > 0 {
			how = strings.Join(append(mechs, auth.Plain), ",")
		}
		var grants []string
		for _, g := range u.Grants {
			grants = append(grants, g.String())
		}
		if len(grants) == 0 {
			grants = []string{"(nothing)"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Name, how, strings.Join(grants, " "))
	}
	return tw.Flush()
}
