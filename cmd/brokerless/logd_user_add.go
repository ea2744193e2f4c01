package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"github.com/brokerless/brokerless/logd/auth"
)

var logdUserAddCmd = command{
	name:     "logd user add",
	summary:  "add a user (salted SCRAM credentials and grants) to a logd users file",
	synopsis: "--file FILE --user NAME (--password-stdin | --no-password) [--allow OP:PREFIX]... [flags]",
	about: `
Adds a user to the users file that 'brokerless logd --users FILE' reads,
creating the file (mode 0600) if it does not exist. The password is read
from the first line of standard input with --password-stdin; the file
keeps only what SCRAM needs to check it — per mechanism a random salt,
the iteration count, StoredKey and ServerKey — never the password.
SASL PLAIN logins are checked against the same stored keys.

--no-password adds a user who can authenticate only with a TLS client
certificate whose subject CN is the user's name (logd --tls-client-ca).

Each --allow grants one operation on every name that starts with a
prefix ("*" for every name):
  produce:PREFIX  produce to the topics (and create them on first use)
  consume:PREFIX  fetch from the topics, list their offsets, commit a
                  group's offsets for them
  group:PREFIX    use the consumer groups (join, commit, describe)
  admin:PREFIX    create and delete the topics; read broker configs
A user sees in Metadata only the topics they hold a grant on.

The file is JSON; logd reads it at start, so restart logd after a
change. The change is written to a temporary file that is then renamed
over FILE, so logd never reads half of it; 'logd user add' and 'logd
user remove' runs on one file take turns, under a lock on FILE.lock
(an empty file left next to FILE; a symlink there is refused, not
followed). If FILE is a symlink, the file it points to is the one
changed, and locked; the link stays. If that file does not exist yet
(a dangling symlink, or a chain of them), it is created where the last
link points, so logd, reading FILE, reads what was written; if the
directory it points into does not exist, nothing is written.`,
	examples: `
# alice produces to and consumes orders.*, in consumer groups billing-*.
printf '%s\n' "$ALICE_PASSWORD" | brokerless logd user add --file users.json --user alice \
  --password-stdin --allow produce:orders. --allow consume:orders. --allow group:billing-

# An administrator with SCRAM-SHA-512 only.
brokerless logd user add --file users.json --user ops --password-stdin \
  --mechanism SCRAM-SHA-512 --allow 'admin:*' --allow 'consume:*' < ops-password.txt

# A service that connects with a client certificate (CN=indexer).
brokerless logd user add --file users.json --user indexer --no-password --allow 'consume:*' --allow 'group:indexer'`,
	run: runLogdUserAdd,
}

func runLogdUserAdd(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	var (
		file       = fs.String("file", "", "users file to create or change (required)")
		name       = fs.String("user", "", "user name (required); for certificate users, the certificate's subject CN")
		fromStdin  = fs.Bool("password-stdin", false, "read the password from the first line of standard input")
		noPassword = fs.Bool("no-password", false, "no password: the user authenticates only with a TLS client certificate")
		mechanisms = fs.StringSlice("mechanism", auth.ScramMechanisms, "SCRAM mechanisms to store credentials for")
		iterations = fs.Int("iterations", auth.DefaultIterations, fmt.Sprintf("PBKDF2 iterations (%d to %d, Kafka's range)", auth.MinIterations, auth.MaxIterations))
		allow      = fs.StringArray("allow", nil, "grant OPERATION:PREFIX (produce, consume, group, admin; * for every name); repeatable")
		replace    = fs.Bool("replace", false, "replace the user if the file has one of that name")
	)
	if err := inv.parse(fs); err != nil {
		return err
	}
	u := &auth.User{Name: *name}
	switch {
	case *file == "":
		return usagef("--file is required")
	case *name == "":
		return usagef("--user is required")
	case *fromStdin == *noPassword:
		return usagef("give the password on standard input with --password-stdin, or --no-password for a certificate-only user")
	case *noPassword && fs.Changed("mechanism"):
		return usagef("--mechanism needs a password (--password-stdin)")
	case *iterations < auth.MinIterations || *iterations > auth.MaxIterations:
		return usagef("--iterations %d: want %d to %d", *iterations, auth.MinIterations, auth.MaxIterations)
	}
	if err := auth.CheckName(*name); err != nil {
		return usagef("--user %q: %v", *name, err)
	}
	for i, m := range *mechanisms {
		if !slices.Contains(auth.ScramMechanisms, m) || slices.Contains((*mechanisms)[:i], m) {
			return usagef("--mechanism %q: want %s, each once", m, strings.Join(auth.ScramMechanisms, " or "))
		}
	}
	for _, a := range *allow {
		g, err := auth.ParseGrant(a)
		if err != nil {
			return usagef("--allow: %v", err)
		}
		u.Grants = append(u.Grants, g)
	}
	// A first look, before reading a password: the check that counts is
	// the one under the lock below.
	users, err := loadOrNewUsers(*file)
	if err != nil {
		return err
	}
	if _, exists := users.Lookup(*name); exists && !*replace {
		return fmt.Errorf("%s already has a user %q (--replace to change it)", *file, *name)
	}
	if *fromStdin {
		password, err := readPassword(inv)
		if err != nil {
			return err
		}
		u.SCRAM = map[string]auth.Credential{}
		for _, m := range *mechanisms {
			c, err := auth.GenerateCredential(rand.Reader, m, password, *iterations)
			if err != nil {
				return err
			}
			u.SCRAM[m] = c
		}
	}
	err = updateUsersFile(ctx, inv.err, *file, true, func(users *auth.Users) error {
		if _, exists := users.Lookup(*name); exists && !*replace {
			return fmt.Errorf("%s already has a user %q (--replace to change it)", *file, *name)
		}
		return users.Put(u)
	})
	if err != nil {
		return err
	}
	how := "client certificate only"
	if *fromStdin {
		how = strings.Join(*mechanisms, ", ") + ", PLAIN"
	}
	grants := "no grants"
	if len(*allow) > 0 {
		grants = "allow " + strings.Join(*allow, " ")
	}
	fmt.Fprintf(inv.out, "%s: user %q (%s; %s)\n", *file, *name, how, grants)
	return nil
}

// readPassword reads the first line of standard input, without its line
// ending; an empty one is a usage error.
func readPassword(inv *invocation) (string, error) {
	line, err := bufio.NewReader(inv.in).ReadString('\n')
	if err != nil && line == "" {
		return "", usagef("--password-stdin: no password on standard input")
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return "", usagef("--password-stdin: the password is empty")
	}
	return password, nil
}
