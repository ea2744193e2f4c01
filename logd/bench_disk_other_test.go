//go:build !linux

package logd

// readDiskStats is measured on Linux only.
func readDiskStats() (diskStats, bool) { return diskStats{}, false }
