package logd

import (
	"bufio"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSendToStoppedWriterGivesBack: an answer handed to a writer that
// has stopped (its write failed: a client not reading, or gone) is not
// written, and what it holds comes back: a Fetch answer's copied record
// bytes (MaxCopiedFetchBytes) above all, which would otherwise stay
// taken for the server's life. The writer here has stopped with its
// queue full, so send cannot queue the answer.
func TestSendToStoppedWriterGivesBack(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cn := pipeConn(t, ts)
	cn.replies <- reply{out: ts.bufs.get(1 << minBufClass)}
	cn.unwritten.Store(1)
	close(cn.writerDone)
	const copied = 1000
	if !ts.copied.take(copied, nil) {
		t.Fatal("no copied bytes to take")
	}
	_ = cn.send(reply{out: ts.bufs.get(1 << minBufClass), fetch: ts.bufs.get(1 << minBufClass), copied: copied, copies: ts.copied})
	cn.close()
	if used := ts.copied.used.Load(); used != 0 {
		t.Fatalf("a Fetch answer the stopped writer never took still holds %d copied bytes after the connection closed", used)
	}
}

// TestCopiedFetchBufferFitsItsContent: a Fetch answer holding copied
// record bytes until written holds them in a buffer of about their
// size, not in the buffer its connection's largest earlier fetch left
// (fetchSize, up to 8 MiB): MaxCopiedFetchBytes counts the content, so
// a client that once fetched 8 MiB and then leaves answers of one
// 512 KiB batch unread held 8 MiB a connection, counted 512 KiB.
func TestCopiedFetchBufferFitsItsContent(t *testing.T) {
	ts, _ := copiedServer(t, 8<<20, 1, true, func(*Config) {})
	cn := pipeConn(t, ts)
	cn.fetchSize = 1 << maxBufClass // an earlier fetch used the largest buffer

	cn.unwritten.Store(1) // the writer is busy: the answer waits in replies
	req := &request{key: kmsg.Fetch.Int16(), version: 11, correlation: 2, clientID: "c", body: fetchPartitions("f", nil, []int32{0})}
	if err := cn.answer(req); err != nil {
		t.Fatal(err)
	}
	ans := <-cn.replies
	if ans.copied < copiedBatch || ans.copied != int64(len(ans.fetch)) {
		t.Fatalf("the answer holds %d bytes, %d counted copied, want one batch (%d and its header)", len(ans.fetch), ans.copied, copiedBatch)
	}
	if cap(ans.fetch) > classSize(len(ans.fetch)) {
		t.Errorf("an unwritten Fetch answer holds %d copied bytes (counted %d) in a %d-byte buffer", len(ans.fetch), ans.copied, cap(ans.fetch))
	}
	ans.release(&ts.bufs)
	if used := ts.copied.used.Load(); used != 0 {
		t.Fatalf("%d copied bytes still taken", used)
	}
}

// pipeConn is a connection of ts over one end of a pipe (the other
// closed when the test ends), with room for one queued answer and a
// writer that the test stands in for.
func pipeConn(t *testing.T, ts *testServer) *conn {
	nc, peer := net.Pipe()
	t.Cleanup(func() { peer.Close() })
	r := bufio.NewReader(nc)
	return &conn{
		s:          ts.Server,
		nc:         nc,
		r:          r,
		cl:         client{files: &fetchFiles{all: &ts.fetchFiles, limit: 1}, peer: newPeerWatch(ts.ctx, nc, r)},
		replies:    make(chan reply, 1),
		writerDone: make(chan struct{}),
	}
}
