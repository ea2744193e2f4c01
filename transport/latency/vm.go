package latency

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pageReportingDir holds the kernel's free page reporting parameters
// (Linux guests with a virtio balloon that reports free pages).
const pageReportingDir = "/sys/module/page_reporting/parameters/"

// pageReportingOff is the order that turns reporting off: above the
// largest order the buddy allocator has (10), no free block qualifies.
const pageReportingOff = 11

// ReportedKiB is the memory this guest has reported free to its
// hypervisor since boot (free page reporting), where the kernel counts
// it: the hypervisor may drop those pages, and the guest then pays for
// each on its next first touch. ok is false where there is no such count.
func ReportedKiB() (kib int64, ok bool) {
	return readInt(pageReportingDir + "reported_kib")
}

// PageReportingNote says, for a benchmark's log, that this VM reports
// free memory to its hypervisor, and what that does to a comparison:
// memory freed by one side (a log evicted, a topic deleted, a heap
// shrunk) is reported and dropped, and whichever side touches it first
// afterwards pays about a second of CPU a GiB (measured on the
// project's VM), a cost of neither side's work. It is "" when
// reporting is off or absent.
func PageReportingNote() string { return pageReportingNote(pageReportingDir) }

func pageReportingNote(dir string) string {
	order, ok := readInt(dir + "page_reporting_order")
	if !ok || order >= pageReportingOff {
		return ""
	}
	return fmt.Sprintf("this VM reports free memory to its hypervisor (page_reporting_order=%d): whichever side first touches memory freed before pays for it, about 1 s of CPU a GiB here, so ratios may measure the VM; for comparable sides, as root: echo %d > %spage_reporting_order (and back to %d after)",
		order, pageReportingOff, dir, order)
}

func readInt(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil
}
