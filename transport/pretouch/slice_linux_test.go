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
// it is after Slice, for byte and struct elements alike. Each buffer
// is made after the heap's free memory went back to the kernel
// (FreeOSMemory): one made where an earlier one was freed (the other
// subtest, or this one run again) would otherwise be all mapped
// already. Even so the runtime may hand out memory it has not given
// back yet (seen once in CI, for the second subtest): the buffer is
// then made again, and the test skipped, saying so, if none of three
// is fresh.
func TestSliceMapsEveryPage(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		var b []byte
		fresh(t, func() []byte { b = make([]byte, 64<<20); return b })
		checkMapped(t, b, func() { Slice(b) })
	})
	t.Run("structs", func(t *testing.T) {
		type slot struct {
			p    *int
			a, b uint64
			s    []byte
			c    [3]byte // an odd size: elements straddle pages
		}
		var s []slot
		mem := fresh(t, func() []byte {
			s = make([]slot, 1<<20)
			return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(slot{})))
		})
		checkMapped(t, mem, func() { Slice(s) })
	})
}

// fresh makes a buffer with mk, after returning the heap's free memory
// to the kernel, until one is not all mapped (at most three times; the
// test is skipped if none is), and returns its bytes.
func fresh(t *testing.T, mk func() []byte) []byte {
	t.Helper()
	for range 3 {
		debug.FreeOSMemory()
		b := mk()
		if in, pages := resident(t, b); in < pages {
			return b
		}
	}
	t.Skip("three buffers just made were all mapped already (the runtime reused memory it had not given back): nothing to test")
	return nil
}

// checkMapped checks that every page of b is mapped after touch.
func checkMapped(t *testing.T, b []byte, touch func()) {
	t.Helper()
	before, pages := resident(t, b)
	touch()
	if after, _ := resident(t, b); after != pages {
		t.Errorf("after Slice, %d of %d pages mapped (%d before)", after, pages, before)
	}
}
