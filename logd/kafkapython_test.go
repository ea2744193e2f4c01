package logd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// pythonKafka returns Debian's /usr/bin/python3 once it can import
// Debian's python3-kafka (kafka-python 2.0.2); the test skips without
// them, unless BROKERLESS_INTEROP=1, where a missing peer fails. -I
// keeps the repository's folders off the module path.
func pythonKafka(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-I", "-c", "import kafka").Run(); err != nil {
		if os.Getenv("BROKERLESS_INTEROP") == "1" {
			t.Fatalf("python3-kafka is not installed (apt-get install python3-kafka) and BROKERLESS_INTEROP=1: %v", err)
		}
		t.Skip("python3-kafka not installed (apt-get install python3-kafka); set BROKERLESS_INTEROP=1 to require it")
	}
	return python
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
