package peertest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records what a helper does to its test: Skip and Fatal end
// the calling goroutine, as testing.T's do.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	logs            []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Log(args ...any) {
	f.logs = append(f.logs, fmt.Sprint(args...))
}
func (f *fakeTB) Skip(args ...any) {
	f.Log(args...)
	f.skipped = true
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) {
	f.Log(args...)
	f.failed = true
	runtime.Goexit()
}

// run calls fn with a fakeTB on a goroutine of its own, so that Skip
// and Fatal can end it, and reports whether fn returned.
func run(fn func(t testing.TB)) (f *fakeTB, returned bool) {
	f = &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
		returned = true
	}()
	<-done
	return f, returned
}

// check reports a difference between what fn did and the expected
// outcome: "skip", "fatal", "log" (logged and returned) or "ok"
// (returned without a word); every message must hold each of want.
func check(t *testing.T, fn func(t testing.TB), outcome string, want ...string) {
	t.Helper()
	f, returned := run(fn)
	got := "ok"
	switch {
	case f.failed:
		got = "fatal"
	case f.skipped:
		got = "skip"
	case len(f.logs) > 0:
		got = "log"
	}
	if got != outcome {
		t.Fatalf("outcome %s, want %s; messages %q", got, outcome, f.logs)
	}
	if returned != (outcome == "ok" || outcome == "log") {
		t.Errorf("%s: helper returned=%v", outcome, returned)
	}
	if outcome != "ok" && len(f.logs) != 1 {
		t.Fatalf("%d messages, want 1: %q", len(f.logs), f.logs)
	}
	for _, w := range want {
		if !strings.Contains(f.logs[0], w) {
			t.Errorf("message %q lacks %q", f.logs[0], w)
		}
	}
}

const skipHint, failHint = "set BROKERLESS_INTEROP=1 to require it", "BROKERLESS_INTEROP=1 requires it"

// modes runs fn's test once without BROKERLESS_INTEROP, where a missing
// peer must skip, and once with BROKERLESS_INTEROP=1, where it must fail.
func modes(t *testing.T, fn func(t *testing.T, interop bool)) {
	for _, interop := range []bool{false, true} {
		t.Run(fmt.Sprintf("interop=%v", interop), func(t *testing.T) {
			t.Setenv("BROKERLESS_INTEROP", map[bool]string{false: "", true: "1"}[interop])
			if Required() != interop {
				t.Fatalf("Required() = %v with BROKERLESS_INTEROP=%q", Required(), os.Getenv("BROKERLESS_INTEROP"))
			}
			fn(t, interop)
		})
	}
}

// missingOutcome is what a missing peer does to the test in a mode.
func missingOutcome(interop bool) (outcome, hint string) {
	if interop {
		return "fatal", failHint
	}
	return "skip", skipHint
}

func TestMissing(t *testing.T) {
	modes(t, func(t *testing.T, interop bool) {
		outcome, hint := missingOutcome(interop)
		check(t, func(tb testing.TB) { Missing(tb, "kcat, gone", "apt-get install kcat") }, outcome,
			"missing peer: kcat, gone; install: apt-get install kcat; "+hint)
	})
}

func TestWithout(t *testing.T) {
	modes(t, func(t *testing.T, interop bool) {
		outcome, hint := "log", "promtool check skipped; "+skipHint
		if interop {
			outcome, hint = "fatal", failHint
		}
		check(t, func(tb testing.TB) {
			Without(tb, "promtool, gone", "apt-get install prometheus", "promtool check skipped")
		}, outcome,
			"missing peer: promtool, gone; install: apt-get install prometheus; "+hint)
	})
}

func TestLookPath(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "peer-here"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	modes(t, func(t *testing.T, interop bool) {
		var path string
		check(t, func(tb testing.TB) { path = LookPath(tb, "peer-here", "x") }, "ok")
		if path != filepath.Join(bin, "peer-here") {
			t.Errorf("LookPath = %q, want %q", path, filepath.Join(bin, "peer-here"))
		}
		outcome, hint := missingOutcome(interop)
		check(t, func(tb testing.TB) { LookPath(tb, "peer-gone", "apt-get install peer-gone") }, outcome,
			"missing peer: peer-gone, not found in $PATH; install: apt-get install peer-gone; "+hint)
	})
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	here := filepath.Join(dir, "stats.js")
	if err := os.WriteFile(here, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	modes(t, func(t *testing.T, interop bool) {
		var path string
		check(t, func(tb testing.TB) { path = File(tb, "Etsy statsd", here, "x") }, "ok")
		if path != here {
			t.Errorf("File = %q, want %q", path, here)
		}
		gone := filepath.Join(dir, "gone.js")
		outcome, hint := missingOutcome(interop)
		check(t, func(tb testing.TB) { File(tb, "Etsy statsd", gone, "run .ci/install.d/40-statsd.sh") }, outcome,
			"missing peer: Etsy statsd, not found at "+gone+"; install: run .ci/install.d/40-statsd.sh; "+hint)
	})
}

func TestPythonModule(t *testing.T) {
	if _, err := os.Stat(Python); err != nil {
		t.Skipf("%s: %v (the test needs an interpreter to import from)", Python, err)
	}
	modes(t, func(t *testing.T, interop bool) {
		var path string
		check(t, func(tb testing.TB) { path = PythonModule(tb, "sys", "x") }, "ok")
		if path != Python {
			t.Errorf("PythonModule = %q, want %q", path, Python)
		}
		outcome, hint := missingOutcome(interop)
		check(t, func(tb testing.TB) { PythonModule(tb, "brokerless_no_such_module", "apt-get install python3-none") }, outcome,
			"missing peer: Python module brokerless_no_such_module of /usr/bin/python3, ModuleNotFoundError: No module named 'brokerless_no_such_module'; install: apt-get install python3-none; "+hint)
	})
}

func TestDir(t *testing.T) {
	t.Setenv("BROKERLESS_PEERS", "/somewhere/peers")
	if d := Dir(); d != "/somewhere/peers" {
		t.Errorf("Dir() = %q with BROKERLESS_PEERS set", d)
	}
	if s, want := Script("40-statsd.sh"), "run .ci/install.d/40-statsd.sh (BROKERLESS_PEERS=/somewhere/peers)"; s != want {
		t.Errorf("Script = %q, want %q", s, want)
	}
	t.Setenv("BROKERLESS_PEERS", "")
	want, err := filepath.Abs(filepath.Join("..", "..", ".ci", "peers"))
	if err != nil {
		t.Fatal(err)
	}
	if d := Dir(); d != want {
		t.Errorf("Dir() = %q, want the module's %q", d, want)
	}
}
