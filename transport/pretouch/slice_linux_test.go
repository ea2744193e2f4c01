package pretouch

import (
	"runtime/debug"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of b's whole pages that are mapped
// (mincore(2)).
func resident(t *testing.T, b []byte) (in, pages int) {
	t.Helper()
	start := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(pageSize) - 1) &^ uintptr(pageSize-1)
	end := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))) &^ uintptr(pageSize-1)
	pages = int(end-start) / pageSize
	vec := make([]byte, pages)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	for _, v := range vec {
		in += int(v & 1)
	}
	return in, pages
}

// TestSliceMapsEveryPage: a large buffer just made is not all mapped
// (the premise: make leaves fresh memory untouched), and every page of
// it is after Slice, for byte and struct elements alike. Each subtest
// first returns the heap's free memory to the kernel (FreeOSMemory):
// a buffer made where an earlier one was freed (the other subtest, or
// this one run again) would otherwise be all mapped already.
func TestSliceMapsEveryPage(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		debug.FreeOSMemory()
		b := make([]byte, 64<<20)
		checkMapped(t, b, func() { Slice(b) })
	})
	t.Run("structs", func(t *testing.T) {
		type slot struct {
			p    *int
			a, b uint64
			s    []byte
			c    [3]byte // an odd size: elements straddle pages
		}
		debug.FreeOSMemory()
		s := make([]slot, 1<<20)
		checkMapped(t, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(slot{}))), func() { Slice(s) })
	})
}

// checkMapped checks that b, just made, is not all mapped, and that it
// is after touch.
func checkMapped(t *testing.T, b []byte, touch func()) {
	t.Helper()
	before, pages := resident(t, b)
	if before == pages {
		t.Fatalf("all %d pages of a buffer just made are mapped already: nothing to test", pages)
	}
	touch()
	if after, _ := resident(t, b); after != pages {
		t.Errorf("after Slice, %d of %d pages mapped (%d before)", after, pages, before)
	}
}
