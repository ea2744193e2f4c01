package logd

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestBackpressuredConnectionFreedWhenClientCloses: more acks=all
// produces than the connection's pipeline holds (their fsyncs held)
// pause the connection's reader; a client that closes its socket then
// is still noticed at once — its waits end and its connection is
// freed — rather than at IdleTimeout or the produces' timeouts. With
// extra, requests the client pipelined beyond the one that paused the
// reader wait in the read buffer, and do not hide the close; nor do
// more than the read buffer holds (Linux: poll's POLLRDHUP).
func TestBackpressuredConnectionFreedWhenClientCloses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra func(t *testing.T, c net.Conn, corr int32)
	}{
		{"paused", func(*testing.T, net.Conn, int32) {}},
		{"paused with requests buffered", func(t *testing.T, c net.Conn, corr int32) {
			for i := range int32(3) {
				if err := writeRequestCorr(c, corr+i, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"paused with the read buffer full", func(t *testing.T, c net.Conn, corr int32) {
			if runtime.GOOS != "linux" {
				t.Skip("a hang-up behind unread bytes is seen with POLLRDHUP (Linux)")
			}
			sendProduce(t, c, corr, "p", recordBatch(make([]byte, 3*connReadBuffer)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateFS{FS: vfs.OS}
			ts := startServer(t, t.TempDir(), func(c *Config) {
				c.Storage.FS = gate
				c.MaxConnectionsPerIP = 1
				c.IdleTimeout = time.Hour
			})
			if err := ts.autoCreate("p"); err != nil {
				t.Fatal(err)
			}
			log, err := ts.store.Partition("p", 0)
			if err != nil {
				t.Fatal(err)
			}
			entered := gate.close() // segment fsyncs block from here on
			t.Cleanup(gate.open)    // before the server closes (cleanups run last first)
			c := dial(t, ts.addr)
			sendProduce(t, c, 1, "p", recordBatch([]byte("a"))) // timeout 30 s
			<-entered
			// One answer with the writer, connPipeline queued, and one
			// more that the reader cannot hand over: it is paused.
			n := connPipeline + 2
			for i := 2; i <= n; i++ {
				sendProduce(t, c, int32(i), "p", recordBatch([]byte("a")))
			}
			waitUntil(t, "every produce appended", func() bool { return log.EndOffset() == int64(n) })
			tc.extra(t, c, int32(n+1))
			c.Close()
			waitUntil(t, "the paused connection freed once its client closed", func() bool {
				return ts.metrics.connections.Load() == 0 && ts.metrics.peerGone.Load() == 1
			})
			d := dial(t, ts.addr)
			if _, err := rawRequest(t, d, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
				t.Fatalf("a new connection from the same address: %v", err)
			}
		})
	}
}
