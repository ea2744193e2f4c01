package statsd

import (
	"errors"
	"net"
	"runtime"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/transport/udpbatch"
)

// newBatchReader returns a function that reads up to len(ms) datagrams
// from c into the buffers of ms with one recvmmsg (udpbatch), setting
// their N and Flags, and a function to call once reading is over. It
// asks for no source address: x/net's ReadBatch parses one into a new
// net.UDPAddr for every datagram, two allocations a datagram that the
// server never reads, and the garbage collections that follow.
//
// The calling goroutine keeps its own OS thread until done is called,
// and when the socket is empty it waits in poll(2) on that thread, not
// in Go's netpoller: the kernel wakes this thread itself when a
// datagram arrives, where the netpoller needs a second thread to see
// the socket ready and hand the reader to a free P first. With the
// kernel's default receive buffer (212,992 bytes: about 200 of the
// ingest benchmark's datagrams, a few milliseconds of traffic) every
// such step counts. read returns 0 datagrams and no error when poll
// times out (readerPollMillis), so that a Close is not held up.
func newBatchReader(c *net.UDPConn, ms []ipv4.Message) (read func() (int, error), done func(), err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	h := udpbatch.NewHeaders(ms, false)
	var (
		n     int
		errno unix.Errno
		pfd   = []unix.PollFd{{Events: unix.POLLIN}}
	)
	recv := func(fd uintptr) bool {
		for {
			if n, errno = h.Recv(fd, ms); errno != unix.EAGAIN {
				return true
			}
			pfd[0].Fd = int32(fd)
			k, perr := unix.Poll(pfd, readerPollMillis)
			if perr == unix.EINTR || k > 0 {
				continue
			}
			// Timed out, or poll failed: nothing read.
			n, errno = 0, 0
			if perr != nil && !errors.As(perr, &errno) {
				errno = unix.EIO
			}
			return true
		}
	}
	runtime.LockOSThread()
	return func() (int, error) {
		if err := rc.Read(recv); err != nil {
			return 0, err
		}
		if errno != 0 {
			return 0, errno
		}
		return n, nil
	}, runtime.UnlockOSThread, nil
}
