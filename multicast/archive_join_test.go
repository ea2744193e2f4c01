package multicast

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestArchiveJoinSeqZero: JoinSeq(0) is refused, as ParseJoin refuses
// seq:0. Accepted, it was taken for "no seq:N" (a zero N), and the
// subscriber replayed the whole archive, every session of it, not the
// current session's history it asked for.
func TestArchiveJoinSeqZero(t *testing.T) {
	log := &memLog{batch: 100}
	log.add(msgs(sA, 1, 5)...)
	cfg := testConfig(t)
	cfg.Feed = 1
	cfg.Archive.Open = func(context.Context) (transport.Log, error) { return log, nil }
	cfg.Archive.Join = JoinSeq(0)
	s, err := NewSubscriber(context.Background(), cfg)
	if err == nil {
		s.Close()
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, ErrBadConfig) || ce.Field != "Archive.Join" {
		t.Fatalf("JoinSeq(0): error %v, want a ConfigError naming Archive.Join", err)
	}
}

// TestArchiveJoinTimeRetention: a time join on an archive whose
// retention deleted the start of the session, which its publisher
// began after the join time, reports what was deleted (GapRetention),
// as a seq join does: the reader says its time lookup landed on the
// log's first position (archive.Reader.Trimmed). (The history started
// silently at the first record left.)
func TestArchiveJoinTimeRetention(t *testing.T) {
	s := sessionAt(joinT.Add(time.Second))
	log := &memLog{batch: 10, epoch: joinT.Add(2 * time.Second)}
	log.add(msgs(s, 1, 105)...)
	log.trim(20) // records of 21.. are left
	cfg := Config{Feed: 1, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
	cfg.Archive.URL = "logd://127.0.0.1:1/t"
	cfg.Archive.Join = JoinTime(joinT)
	cfg.Archive.Wait = time.Minute
	cfg.Archive.setDefaults()
	a := newArchiveSide(&cfg, log)
	t.Cleanup(func() { a.close() })
	got := feedLive(a, cat(startEv(s, transport.StreamID{}, 100), msgsAt(s, 100, 110, joinT.Add(time.Minute)))...)
	got = append(got, replayAll(t, a)...)
	gaps := account(t, got, span{s, 1, 110})
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: s, From: 1, To: 20, Reason: transport.GapRetention}) {
		t.Errorf("gaps %v, want 1..20 deleted by retention", gaps)
	}
}

// TestArchiveJoinTimeLogd: a late joiner with join time:T on a feed
// recorded into logd starts with the first message published at or
// after T (the recorder keeps the publish time as the record's, which
// logd's time index finds), then goes live: no gap, no duplicate.
func TestArchiveJoinTimeLogd(t *testing.T) {
	cfg := testConfig(t)
	addr := startLogd(t)
	raw := startRecorder(t, cfg, addr, "jointime")
	p := mustPub(t, cfg)
	base := time.Now().Add(time.Second) // after the session started
	publish := func(from, to int) {
		ctx := context.Background()
		for i := from; i < to; i++ {
			if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64), Time: base.Add(time.Duration(i) * time.Millisecond)}); err != nil {
				t.Errorf("publish %d: %v", i, err)
				return
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Errorf("flush: %v", err)
		}
	}
	publish(0, 200)
	waitRecorded(t, raw, 200)
	scfg := cfg
	scfg.Archive.URL, scfg.Archive.Join = raw, JoinTime(base.Add(100*time.Millisecond))
	s := mustSub(t, scfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		publish(200, 300)
		p.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := s.Receive(ctx)
	if err != nil || ev.Kind != transport.EventStreamStart || ev.Start.FirstSeq != 101 {
		t.Fatalf("first event %+v, %v: want the stream's start at 101 (message 100, published at T)", ev, err)
	}
	a := accountant{started: true, next: 101}
	for {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("last message %d: %v; stats %+v", a.lastIndex, err, s.Stats().Archive)
		}
		if ev.Kind == transport.EventStreamEnd {
			break
		}
		a.add(t, &ev)
	}
	<-done
	if st := s.Stats().Archive; len(a.gaps) != 0 || a.lastIndex != 299 || st.FromArchive < 100 {
		t.Fatalf("gaps %v, last message %d: want none, 299, the first 100 from the archive; stats %+v", a.gaps, a.lastIndex, st)
	}
}
