//go:build !linux

package logd

// readDiskStats is measured on Linux only.
func readDiskStats() (diskStats, bool) { return diskStats{}, false }

// vmReportedKiB is measured on Linux only.
func vmReportedKiB() (int64, bool) { return 0, false }
