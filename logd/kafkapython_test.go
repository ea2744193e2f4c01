package logd

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/peertest"
)

// pythonKafka returns Debian's /usr/bin/python3 once it can import
// Debian's python3-kafka (kafka-python 2.0.2); the test skips without
// them, unless BROKERLESS_INTEROP=1, where a missing peer fails. -I
// keeps the repository's folders off the module path.
func pythonKafka(t *testing.T) string {
	t.Helper()
	return peertest.PythonModule(t, "kafka", "apt-get install python3-kafka (.ci/install.d/30-logd.sh)")
}

// runPython runs a kafka-python script with args, failing the test on
// an error exit, and returns its stdout.
func runPython(t *testing.T, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pythonKafka(t), append([]string{"-I", "-c", script}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafka-python script: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	return out.String()
}
