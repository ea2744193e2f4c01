package pretouch

import (
	"os"
	"unsafe"
)

var pageSize = os.Getpagesize()

// Slice writes the zero value to elements of s no more than a page
// apart, its first and last among them, so that the kernel maps every
// page s spans now.
// The elements must be zero already, as make leaves them: Slice is for
// buffers just made.
func Slice[T any](s []T) {
	var zero T
	step := max(1, pageSize/max(1, int(unsafe.Sizeof(zero))))
	for i := 0; i < len(s); i += step {
		s[i] = zero
	}
	if len(s) > 0 {
		s[len(s)-1] = zero
	}
}
