package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDemoArchive: `brokerless demo archive` with no flag exits 0 and says nothing was lost;
// each of its three subscribers took messages from the archive: the
// lossy one the dead session's tail, the stalled one what the window no
// longer held, the late one its history.
func TestDemoArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5 s demo")
	}
	if raceEnabled {
		// Under the race detector, on 2 cores, the recorder in the same
		// process loses what it must record at the rate that shows the
		// stall (20,000/s), and at rates it keeps up with (2,000/s) the
		// stalled subscriber's buffers hold its stall: the properties
		// are TestArchive*'s, which run under -race.
		t.Skip("the demo needs the CPU the race detector takes")
	}
	spawn := spawnSelf
	t.Cleanup(func() { spawnSelf = spawn })
	spawnSelf = func(args ...string) (*exec.Cmd, error) {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), childArgs+"="+strings.Join(args, "\x1f"))
		return c, nil
	}
	code, out, errOut := runCLI(t, "", "demo", "archive")
	if code != 0 || !strings.Contains(out, "nothing lost:") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, name := range []string{"lossy", "stalled", "late"} {
		m := regexp.MustCompile(`(?m)^` + name + ` .* (\d+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no row for %s:\n%s", name, out)
		}
		if n, _ := strconv.Atoi(m[1]); n == 0 {
			t.Errorf("%s took nothing from the archive:\n%s", name, out)
		}
	}
	t.Log("\n" + out)
}
