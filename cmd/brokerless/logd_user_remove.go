package main

import (
	"context"
	"fmt"

	"github.com/brokerless/brokerless/logd/auth"
)

var logdUserRemoveCmd = command{
	name:     "logd user remove",
	summary:  "remove a user from a logd users file",
	synopsis: "--file FILE --user NAME",
	about: `
Removes a user from the users file that 'brokerless logd --users FILE'
reads. logd reads the file at start: restart it for the change to take
effect. As with 'logd user add', the file is replaced by a rename, under
a lock on FILE.lock; if FILE is a symlink, the file it points to is
the one changed, and the link stays.`,
	examples: `
# bob may no longer connect (after logd restarts).
brokerless logd user remove --file users.json --user bob`,
	run: runLogdUserRemove,
}

func runLogdUserRemove(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	file := fs.String("file", "", "users file (required)")
	name := fs.String("user", "", "user to remove (required)")
	if err := inv.parse(fs); err != nil {
		return err
	}
	switch {
	case *file == "":
		return usagef("--file is required")
	case *name == "":
		return usagef("--user is required")
	}
	err := updateUsersFile(ctx, inv.err, *file, false, func(users *auth.Users) error {
		if !users.Remove(*name) {
			return fmt.Errorf("%s has no user %q", *file, *name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(inv.out, "%s: removed user %q\n", *file, *name)
	return nil
}
