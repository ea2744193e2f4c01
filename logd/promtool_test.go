package logd

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/brokerless/brokerless/transport/peertest"
)

// promtoolCheck runs Debian prometheus' `promtool check metrics` on a
// page and fails on any problem it reports. Without promtool the check
// is skipped, unless BROKERLESS_INTEROP=1, where it fails.
func promtoolCheck(t *testing.T, page []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		peertest.Without(t, "promtool, not found in $PATH", "apt-get install prometheus (.ci/install.d/60-metrics.sh)", "promtool check skipped")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s\npage:\n%s", err, out, page)
	}
}
