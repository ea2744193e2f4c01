package multicast

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// TestArchiveLossyLateJoin: a late joiner (join=earliest) that loses
// a fifth of the datagrams, of a publisher whose window is small: the
// history comes from the archive, then losses the publisher can no
// longer repair come from it too, replay after replay, while the
// recorder lags behind the live feed. Every message is delivered once,
// in order, with no gap.
func TestArchiveLossyLateJoin(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender = reliable.SenderConfig{MaxMessageSize: 4096, MaxQueued: 8, WindowDatagrams: 16, WindowBytes: 16 * reliable.DefaultMTU}
	addr := startLogd(t)
	raw := startRecorder(t, cfg, addr, "lossy")
	p := mustPub(t, cfg)
	publishAt(t, p, 0, 5_000, 64, 50_000)
	waitRecorded(t, raw, 5_000)
	scfg := withFaults(cfg, faultnet.Faults{Seed: 7, Loss: 0.2})
	scfg.Archive.URL, scfg.Archive.Join = raw, JoinEarliest()
	s := mustSub(t, scfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		publishAt(t, p, 5_000, 20_000, 64, 20_000)
		p.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := receiveToEnd(t, ctx, s)
	<-done
	st := s.Stats()
	if len(a.gaps) != 0 || a.lastIndex != 24_999 {
		t.Fatalf("gaps %v, last message %d: want none, 24999; stats %+v", a.gaps, a.lastIndex, st)
	}
	t.Logf("archive %+v; engine gaps %d", st.Archive, st.GapSeqs)
}
