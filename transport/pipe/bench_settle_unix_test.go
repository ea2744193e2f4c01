//go:build unix

package pipe_test

import "syscall"

// settleDisk writes back what earlier runs left dirty in the page cache
// (sync(2)), so that their writeback does not compete with the next
// run's fdatasyncs.
func settleDisk() { syscall.Sync() }
