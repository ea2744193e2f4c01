//go:build linux

package dispatch

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serverCPU is the CPU time (user and system) the PostgreSQL server whose
// postmaster is pid has used: the postmaster's own and its reaped
// children's, and that of its children still running (backends, WAL
// writer, checkpointer…), read from /proc in clock ticks (100 a second).
func serverCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	var ticks int64
	if f := procStat(pid); len(f) > 14 {
		ticks += atoi(f[11]) + atoi(f[12]) + atoi(f[13]) + atoi(f[14])
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		p, _ := strconv.Atoi(filepath.Base(d))
		if f := procStat(p); len(f) > 12 && atoi(f[1]) == int64(pid) {
			ticks += atoi(f[11]) + atoi(f[12])
		}
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// procStat is /proc/pid/stat's fields after the command name: [0] is
// the state, [1] the parent's pid, [11] and [12] user and system time,
// [13] and [14] those of reaped children.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
