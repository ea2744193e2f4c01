package peertest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Python is Debian's interpreter, which Debian's python3-* packages
// belong to. Run it with -I, so that the test's directories stay off its
// module path.
const Python = "/usr/bin/python3"

// Required reports whether BROKERLESS_INTEROP=1: a missing peer then
// fails the test instead of skipping it.
func Required() bool {
	return os.Getenv("BROKERLESS_INTEROP") == "1"
}

// Dir is where the peers built by .ci/install.d live: $BROKERLESS_PEERS,
// or else .ci/peers in the module holding the working directory (the
// nearest parent with a go.mod; a test runs in its package's directory).
func Dir() string {
	if d := os.Getenv("BROKERLESS_PEERS"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join(".ci", "peers")
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".ci", "peers")
		}
		up := filepath.Dir(d)
		if up == d {
			return filepath.Join(wd, ".ci", "peers")
		}
		d = up
	}
}

// Script is the install advice for a peer that .ci/install.d/script
// builds under Dir: "run .ci/install.d/40-statsd.sh (BROKERLESS_PEERS=…)".
func Script(script string) string {
	return "run .ci/install.d/" + script + " (BROKERLESS_PEERS=" + Dir() + ")"
}

// message is the one form of every report of a missing peer: what is
// missing (and why it counts as missing), how to install it, and what
// BROKERLESS_INTEROP=1 does about it.
func message(what, install, tail string) string {
	return "missing peer: " + what + "; install: " + install + "; " + tail
}

// Missing reports that the peer what (with why it is missing, e.g.
// "kcat, not found in $PATH") is not there; install says how to install
// it. It skips t, or fails it under BROKERLESS_INTEROP=1.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	if Required() {
		t.Fatal(message(what, install, "BROKERLESS_INTEROP=1 requires it"))
	}
	t.Skip(message(what, install, "set BROKERLESS_INTEROP=1 to require it"))
}

// Without is Missing for a test that goes on without the peer: it logs
// what the test leaves out (skipped, e.g. "promtool check skipped") and
// returns, or fails t under BROKERLESS_INTEROP=1.
func Without(t testing.TB, what, install, skipped string) {
	t.Helper()
	if Required() {
		t.Fatal(message(what, install, "BROKERLESS_INTEROP=1 requires it"))
	}
	t.Log(message(what, install, skipped+"; set BROKERLESS_INTEROP=1 to require it"))
}

// LookPath returns the path of program bin in $PATH, or reports it
// Missing with install.
func LookPath(t testing.TB, bin, install string) string {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err != nil {
		Missing(t, bin+", not found in $PATH", install)
	}
	return path
}

// File returns path once it exists, or reports the peer what Missing
// with install.
func File(t testing.TB, what, path, install string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, what+", not found at "+path, install)
	}
	return path
}

// PythonModule returns Python once `Python -I -c "import module"`
// succeeds, or reports the module Missing with install, quoting the last
// line Python wrote (e.g. "ModuleNotFoundError: No module named 'kafka'").
func PythonModule(t testing.TB, module, install string) string {
	t.Helper()
	out, err := exec.Command(Python, "-I", "-c", "import "+module).CombinedOutput()
	if err != nil {
		why := err.Error()
		if out = bytes.TrimSpace(out); len(out) > 0 {
			why = string(out[bytes.LastIndexByte(out, '\n')+1:])
		}
		Missing(t, "Python module "+module+" of "+Python+", "+why, install)
	}
	return Python
}
