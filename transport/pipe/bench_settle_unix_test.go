//go:build unix

package pipe_test

import "syscall"

// settleDisk writes back what earlier runs left dirty in the page cache
// (sync(2)) before a run that writes to logd, outside its clock, so that
// every side starts from the same disk state: without it logd alone,
// measured after the recorder's search had written gigabytes, ran at a
// third of its rate before the search (1 KiB records), the kernel's
// writeback of the earlier runs competing with its fdatasyncs.
func settleDisk() { syscall.Sync() }
