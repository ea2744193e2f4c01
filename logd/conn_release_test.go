package logd

import (
	"bufio"
	"net"
	"testing"
)

// TestSendToStoppedWriterGivesBack: an answer handed to a writer that
// has stopped (its write failed: a client not reading, or gone) is not
// written, and what it holds comes back: a Fetch answer's copied record
// bytes (MaxCopiedFetchBytes) above all, which would otherwise stay
// taken for the server's life. The writer here has stopped with its
// queue full, so send cannot queue the answer.
func TestSendToStoppedWriterGivesBack(t *testing.T) {
	ts := startServer(t, t.TempDir())
	nc, peer := net.Pipe()
	defer peer.Close()
	r := bufio.NewReader(nc)
	cn := &conn{
		s:          ts.Server,
		nc:         nc,
		r:          r,
		cl:         client{files: &fetchFiles{all: &ts.fetchFiles, limit: 1}, peer: newPeerWatch(ts.ctx, nc, r)},
		replies:    make(chan reply, 1),
		writerDone: make(chan struct{}),
	}
	cn.replies <- reply{out: ts.bufs.get(1 << minBufClass)}
	cn.unwritten.Store(1)
	close(cn.writerDone)
	const copied = 1000
	if !ts.copied.take(copied) {
		t.Fatal("no copied bytes to take")
	}
	_ = cn.send(reply{out: ts.bufs.get(1 << minBufClass), fetch: ts.bufs.get(1 << minBufClass), copied: copied, copies: ts.copied})
	cn.close()
	if used := ts.copied.used.Load(); used != 0 {
		t.Fatalf("a Fetch answer the stopped writer never took still holds %d copied bytes after the connection closed", used)
	}
}
