//go:build linux

package multicast

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinProcess binds every thread of this process to cpu. A new thread
// takes the affinity of the thread that makes it, so the runtime's later
// threads are bound too.
func pinProcess(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH { // ESRCH: the thread ended meanwhile
			return err
		}
	}
	return nil
}
