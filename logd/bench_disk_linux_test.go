//go:build linux

package logd

import (
	"os"
	"strconv"
	"strings"
)

// readDiskStats sums /proc/diskstats over the machine's whole disks
// (those in /sys/block, so a partition is not counted twice).
func readDiskStats() (diskStats, bool) {
	data, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return diskStats{}, false
	}
	var d diskStats
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 14 || strings.HasPrefix(f[2], "loop") || strings.HasPrefix(f[2], "ram") {
			continue
		}
		if _, err := os.Stat("/sys/block/" + f[2]); err != nil {
			continue
		}
		field := func(i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
		d.reads += field(3)
		d.readBytes += field(5) * 512
		d.busyMs += field(12)
	}
	return d, true
}
