package multicast

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/kafka"
)

// TestArchiveLogdRestart: logd restarts (on the same address and
// directory) while a replay reads it; the reader reads on once it is
// back, within Archive.Wait: every message, no gap.
func TestArchiveLogdRestart(t *testing.T) {
	const n = 60_000
	dir := t.TempDir()
	serve := func(addr string) (*logd.Server, string) {
		srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		return srv, ln.Addr().String()
	}
	srv, addr := serve("127.0.0.1:0")
	defer func() { srv.Close() }()
	ctx := context.Background()
	pub, err := kafka.NewPublisher(ctx, kafka.Config{Brokers: []string{addr}, Topic: "restart"})
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= n; seq++ {
		o := transport.Origin{Stream: sA, Seq: seq, Time: time.Unix(0, int64(seq))}
		if err := pub.Publish(ctx, transport.Message{Payload: []byte("x"), Headers: transport.AppendOrigin(nil, o)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pub.Close()
	log, err := kafka.OpenLog(ctx, kafka.Config{Brokers: []string{addr}, Topic: "restart", LogFetchBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	a := archiveSideOn(t, log, 10*time.Second)
	got := feedLive(a, cat(startEv(sA, transport.StreamID{}, 1), msg(sA, 1), gapEv(sA, 2, n-1, transport.GapUnrecoverable), msg(sA, n))...)
	waitFull(t, a)
	srv.Close()
	srv, _ = serve(addr)
	got = append(got, replayAll(t, a)...)
	if gaps := account(t, got, span{sA, 1, n}); len(gaps) != 0 {
		t.Errorf("gaps %v, want none; stats %+v", gaps, a.stats())
	}
	t.Logf("%+v", a.stats())
}
