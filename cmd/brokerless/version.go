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

// versionLine describes the running binary from its build information.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "brokerless (no build information)"
	}
	return describeBuild(info)
}

// describeBuild is e.g. "brokerless v0.0.0-20261130185037-fadb3542874d
// rev fadb3542874d go1.26.8" for a stamped build. Without a module
// version ("(devel)") it shows the VCS revision, and when the build
// recorded neither (go run, or GOFLAGS=-buildvcs=false) it says how to
// get one (and that a git worktree, whose .git is a file, records
// none) instead of printing a bare "(devel)".
func describeBuild(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	parts := []string{"brokerless"}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		parts = append(parts, v)
	}
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, "rev", rev[:min(len(rev), 12)])
		if t := settings["vcs.time"]; t != "" {
			parts = append(parts, "("+t+")")
		}
		if settings["vcs.modified"] == "true" {
			parts = append(parts, "modified")
		}
	}
	if len(parts) == 1 {
		parts = append(parts, "development build (no version or revision recorded: build with go install -buildvcs=true ./cmd/brokerless in a git clone; a git worktree records none)")
	}
	return strings.Join(append(parts, info.GoVersion), " ")
}
