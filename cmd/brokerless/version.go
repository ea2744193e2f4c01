package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

var versionCmd = command{
	name:     "version",
	summary:  "print the version of this binary",
	synopsis: "",
	about: `
Prints the module version, the source revision it was built from (when
known) and the Go version.`,
	examples: `
brokerless version`,
	run: runVersion,
}

func runVersion(_ context.Context, inv *invocation) error {
	if err := inv.parse(inv.flags()); err != nil {
		return err
	}
	fmt.Fprintln(inv.out, versionLine())
	return nil
}

// versionLine is e.g. "brokerless (devel) rev 1a2b3c4d5e6f (modified) go1.26.8".
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "brokerless (unknown version)"
	}
	parts := []string{"brokerless", info.Main.Version}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, "rev", rev[:min(len(rev), 12)])
		if settings["vcs.modified"] == "true" {
			parts = append(parts, "(modified)")
		}
	}
	return strings.Join(append(parts, info.GoVersion), " ")
}
