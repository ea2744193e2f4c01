package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

func TestHelpListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, _ := runCLI(t, "", args...)
		if code != exitOK {
			t.Errorf("%v: exit %d, want 0", args, code)
		}
		for _, c := range commands() {
			if !strings.Contains(out, c.name) || !strings.Contains(out, c.summary) {
				t.Errorf("%v: the list lacks %q with its summary:\n%s", args, c.name, out)
			}
		}
	}
}

func TestNoArgumentsShowsHelpAndFails(t *testing.T) {
	code, _, errOut := runCLI(t, "")
	if code != exitUsage || !strings.Contains(errOut, "Commands:") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestUnknownCommand(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"mcast"}, "missing subcommand"},
		{[]string{"mcast", "--group", "239.1.2.3:7000"}, `unknown subcommand "--group"`},
		{[]string{"mcast", "publish"}, `unknown subcommand "publish"`},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, "", tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tt.args, code, exitUsage)
		}
		if !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: stderr lacks %q:\n%s", tt.args, tt.want, errOut)
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout:\n%s", tt.args, out)
		}
	}
}

func TestGroupHelp(t *testing.T) {
	code, out, _ := runCLI(t, "", "mcast", "--help")
	if code != exitOK || !strings.Contains(out, "mcast pub") || !strings.Contains(out, "mcast sub") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
}

func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	for _, c := range commands() {
		for _, args := range [][]string{
			append(strings.Fields(c.name), "--help"),
			append([]string{"help"}, strings.Fields(c.name)...),
		} {
			code, out, errOut := runCLI(t, "", args...)
			if code != exitOK {
				t.Errorf("%v: exit %d, stderr:\n%s", args, code, errOut)
			}
			for _, want := range []string{"Usage:\n  brokerless " + c.name, "EXAMPLES:", "brokerless " + c.name} {
				if !strings.Contains(out, want) {
					t.Errorf("%v: help lacks %q:\n%s", args, want, out)
				}
			}
		}
	}
}

func TestFlagErrors(t *testing.T) {
	const g = "--group=239.255.1.2:7000"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"mcast", "pub"}, "--group is required"},
		{[]string{"mcast", "pub", "--group", "10.0.0.1:7000"}, "10.0.0.1 is not an IPv4 multicast address"},
		{[]string{"mcast", "pub", "--group", "239.1.2.3"}, "want an IPv4 multicast address and port"},
		{[]string{"mcast", "pub", "--group", "239.1.2.3:0"}, "the port must not be 0"},
		{[]string{"mcast", "pub", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"mcast", "pub", g, "extra"}, `unexpected argument "extra"`},
		{[]string{"mcast", "pub", g, "--rate", "5"}, "--rate needs --ticks"},
		{[]string{"mcast", "pub", g, "--ticks", "--rate", "0"}, "--rate 0: want a positive number"},
		{[]string{"mcast", "pub", g, "--ticks", "--topic", "x"}, "a tick's topic is its symbol"},
		{[]string{"mcast", "pub", g, "--repairs", "pigeon"}, `--repairs "pigeon": want multicast or unicast`},
		{[]string{"mcast", "pub", g, "--ttl", "300"}, "--ttl 300: must be in [0, 255]"},
		{[]string{"mcast", "pub", g, "--ttl", "-1"}, "--ttl -1: must be in [0, 255]"},
		{[]string{"mcast", "pub", g, "--iface", "nosuch0"}, "--iface nosuch0: no such network interface"},
		{[]string{"mcast", "sub", g, "--iface", "nosuch0"}, "--iface nosuch0: no such network interface"},
		{[]string{"mcast", "pub", g, "--mtu", "0"}, "--mtu 0: must be in [256, 65507]"},
		{[]string{"mcast", "pub", g, "--count", "-1"}, `invalid argument "-1" for "--count"`},
		{[]string{"mcast", "pub", g, "--duration", "-1s"}, "--duration -1s is negative"},
		{[]string{"mcast", "pub", g, "--mtu", "100"}, "--mtu 100: must be in [256, 65507]"},
		{[]string{"mcast", "pub", g, "--ttl", "0", "--mtu", "100000"}, "--mtu 100000: must be in [256, 65507]"},
		{[]string{"mcast", "pub", g, "--feed", "0"}, "--feed must be at least 1"},
		{[]string{"mcast", "pub", g, "--flow", "fast"}, `--flow "fast": want none, min or tagged`},
		{[]string{"mcast", "pub", g, "--flow", "tagged"}, "--flow tagged needs --flow-tag N"},
		{[]string{"mcast", "pub", g, "--flow-min", "2"}, "--flow-min needs --flow min or --flow tagged"},
		{[]string{"mcast", "pub", g, "--flow", "min", "--flow-min", "-1"}, "--flow-min -1 is negative"},
		{[]string{"mcast", "pub", g, "--flow", "min", "--flow-timeout", "0s"}, "--flow-timeout 0s: must be > 0"},
		{[]string{"mcast", "sub", g, "--simulate-loss", "1.5"}, "want a fraction between 0 and 1"},
		{[]string{"mcast", "sub", g, "--spin", "2s"}, "--spin 2s: want a duration from 0 to 1s"},
		{[]string{"mcast", "sub", g, "--join", "sideways"}, `--join "sideways": want live or earliest`},
		{[]string{"mcast", "sub", g, "--interval", "5s"}, "--interval needs --stats"},
		{[]string{"mcast", "sub", g, "--stats", "--interval", "0s"}, "--interval 0s: want a positive duration"},
		{[]string{"mcast", "sub", g, "--seed", "3"}, "--seed needs --simulate-loss"},
		{[]string{"demo", "--rate", "-5"}, "--rate -5: want a positive number"},
		{[]string{"demo", "--duration", "0s"}, "--duration 0s: want a positive duration"},
		{[]string{"demo", "--rate"}, "flag needs an argument: --rate"},
		{[]string{"version", "now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, "", tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", tt.args, code, exitUsage, errOut)
		}
		cmd, _ := lookup(tt.args)
		for _, want := range []string{"brokerless " + cmd.name + ": ", tt.want, "Run 'brokerless " + cmd.name + " --help'"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", tt.args, want, errOut)
			}
		}
	}
}

func TestRuntimeErrorExitsOne(t *testing.T) {
	// A line longer than the largest message is bad input, not a bad flag.
	long := strings.Repeat("x", 2<<20) + "\n"
	code, _, errOut := runCLI(t, long, "mcast", "pub", "--group", "239.255.1.2:7000", "--ttl", "0")
	if code != exitFailure || !strings.Contains(errOut, "stdin line 1 is longer than") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "", "version")
	if code != exitOK || !strings.HasPrefix(out, "brokerless ") {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

func TestDescribeBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "fadb3542874db89e5fd34e96f82214b3de21f700"}, {Key: "vcs.time", Value: "2026-11-30T18:50:37Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"v0.0.0-20261130185037-fadb3542874d", vcs, "brokerless v0.0.0-20261130185037-fadb3542874d rev fadb3542874d (2026-11-30T18:50:37Z) modified go1.26.8"},
		{"(devel)", vcs, "brokerless rev fadb3542874d (2026-11-30T18:50:37Z) modified go1.26.8"},
		{"v1.2.3", nil, "brokerless v1.2.3 go1.26.8"},
		{"(devel)", nil, "brokerless development build (no version or revision recorded: build with go install -buildvcs=true ./cmd/brokerless in a git clone; a git worktree records none) go1.26.8"},
	} {
		info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: tc.version}, Settings: tc.settings}
		if got := describeBuild(info); got != tc.want {
			t.Errorf("describeBuild(%s, %d settings) = %q, want %q", tc.version, len(tc.settings), got, tc.want)
		}
	}
}

// TestHelpNamesTheOriginHeader: pipe and mcast record describe the
// header they write (transport.HeaderOrigin), not the ASCII headers of
// earlier versions, which they no longer write.
func TestHelpNamesTheOriginHeader(t *testing.T) {
	for _, c := range []*command{&pipeCmd, &mcastRecordCmd} {
		if !strings.Contains(c.about, "one binary header, "+transport.HeaderOrigin) {
			t.Errorf("%s --help does not name the header %s", c.name, transport.HeaderOrigin)
		}
		for _, old := range []string{transport.HeaderOriginStream, transport.HeaderOriginSeq, "brokerless.gap"} {
			if strings.Contains(c.about, old) {
				t.Errorf("%s --help names %s, which it does not write", c.name, old)
			}
		}
	}
}
