// Package pretouch maps a new buffer's memory at once, as Aeron
// pre-touches its term buffers: writing to one element of every page
// makes the kernel map the pages when the buffer is made, not one page
// fault at a time on the hot path that first fills it.
//
// Go's allocator takes large buffers from fresh memory that it knows to
// be zero and does not clear, so make leaves their pages unmapped; on a
// virtual machine each first touch can cost microseconds. A multicast
// publisher's 16 MiB retransmit window, touched for the first time
// while Publish filled it, cost a feed's first seconds a fifth of their
// rate (package reliable, window).
//
//	arena := make([]byte, 16<<20)
//	pretouch.Slice(arena)
package pretouch
