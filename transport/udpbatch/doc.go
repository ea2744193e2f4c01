// Package udpbatch reads and sends batches of UDP datagrams with one
// recvmmsg(2) or sendmmsg(2) call (Linux). It reads into the buffers
// of x/net's ipv4.Message entries without allocating per datagram:
// x/net's ReadBatch parses each source address into a new net.UDPAddr,
// two allocations a datagram and the garbage collections that follow.
// [Headers] keeps the source addresses as raw socket addresses and
// turns them into a netip.AddrPort only when asked ([Headers.From]).
//
// It makes the system call and nothing else: how to wait when the
// socket is empty is the caller's choice (Go's netpoller through
// syscall.RawConn.Read, as the multicast subscriber does, or poll(2) on
// a locked thread, as the statsd server does). Other systems have no
// recvmmsg; callers keep x/net's ReadBatch there.
//
//	h := udpbatch.NewHeaders(ms, true)
//	err := rawConn.Read(func(fd uintptr) bool {
//		n, errno = h.Recv(fd, ms)
//		return errno != unix.EAGAIN // else the netpoller waits
//	})
//
// [SendHeaders] sends on a descriptor of any kind, including one that
// Go's netpoller does not know: the multicast publisher sends from a
// blocking socket outside it, so that the kernel's "room to write"
// signal after each datagram wakes no thread of the poller.
package udpbatch
