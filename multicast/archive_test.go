package multicast

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/kafka"
	"github.com/brokerless/brokerless/transport/pipe"
)

// startLogd runs logd in the process over a temporary directory until
// the test ends, and returns its address.
func startLogd(t testing.TB) string {
	t.Helper()
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// startRecorder records cfg's feed into the topic of a logd, as
// `brokerless pipe mcast://… logd://…` does, until the test ends, and
// returns the topic's URL.
func startRecorder(t testing.TB, cfg Config, addr, topic string) string {
	t.Helper()
	ctx := context.Background()
	rcfg := cfg
	rcfg.Receiver.Join = reliable.JoinEarliest
	from, err := NewSubscriber(ctx, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	raw := "logd://" + addr + "/" + topic
	to, err := kafka.NewPublisher(ctx, kafka.Config{Brokers: []string{addr}, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipe.New(from, to, pipe.Config{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("recorder: %v", err)
		}
		to.Close()
		from.Close()
	})
	return raw
}

// waitRecorded waits until the archive's last record is message n-1 of
// the feed (index n-1, sequence n).
func waitRecorded(t testing.TB, raw string, n uint64) {
	t.Helper()
	waitLastRecord(t, raw, fmt.Sprintf("message %d", n), func(m transport.Message) bool {
		o, ok, _ := transport.ParseOrigin(m.Headers)
		return ok && o.Seq >= n
	})
}

// waitLastRecord polls the archive at raw until done holds of its last
// record; what names what it waits for.
func waitLastRecord(t testing.TB, raw, what string, done func(transport.Message) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, _ := url.Parse(raw)
	cfg, err := kafka.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	for {
		ms, err := kafka.Tail(ctx, cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 1 && done(ms[0]) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the archive did not reach %s", what)
		case <-time.After(20 * time.Millisecond): // polling logd: no event to wait on
		}
	}
}

// TestArchivePausedSubscriber: TestPausedSubscriber with an archive.
// The subscriber stops reading for longer than the publisher's window
// (64 datagrams): what the publisher answers LOST for is read from the
// archive, and every message is delivered, with no gap.
func TestArchivePausedSubscriber(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender = reliable.SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * reliable.DefaultMTU}
	addr := startLogd(t)
	raw := startRecorder(t, cfg, addr, "paused")
	scfg := cfg
	scfg.Queue, scfg.RecvBuffer = 2, 64<<10
	scfg.Archive.URL = raw
	s := mustSub(t, scfg)
	p := mustPub(t, cfg)
	a := pausePastWindow(t, s, p)
	st := s.Stats()
	if len(a.gaps) != 0 {
		t.Fatalf("gaps %v; stats %+v", a.gaps, st.Archive)
	}
	// The archive fills every loss; between two losses it stands in for
	// the live messages too, which the replay reads past.
	if st.GapSeqs == 0 || st.Archive.FromArchive < st.GapSeqs {
		t.Fatalf("the engine gave up %d messages and %d came from the archive: want the pause beyond the window, and the archive filling it; stats %+v", st.GapSeqs, st.Archive.FromArchive, st)
	}
	t.Logf("%d messages from the archive, %d replays; receiver %+v", st.Archive.FromArchive, st.Archive.Replays, st.ReceiverStats)
}

// TestArchiveLateJoin: a subscriber that joins a running feed with
// join=earliest gets every message from the first, the archive's then
// the live feed's, once each, and ends with the stream.
func TestArchiveLateJoin(t *testing.T) {
	cfg := testConfig(t)
	addr := startLogd(t)
	raw := startRecorder(t, cfg, addr, "late")
	p := mustPub(t, cfg)
	publishAt(t, p, 0, 20_000, 64, 50_000)
	waitRecorded(t, raw, 20_000)
	scfg := cfg
	scfg.Archive.URL, scfg.Archive.Join = raw, JoinEarliest()
	s := mustSub(t, scfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		publishAt(t, p, 20_000, 20_000, 64, 50_000)
		p.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := receiveToEnd(t, ctx, s)
	<-done
	st := s.Stats().Archive
	if len(a.gaps) != 0 || a.lastIndex != 39_999 {
		t.Fatalf("gaps %v, last message %d: want none, 39999; stats %+v", a.gaps, a.lastIndex, st)
	}
	if st.FromArchive < 20_000 || st.FromArchive >= 40_000 || st.Merges != 1 {
		t.Fatalf("stats %+v: want the first 20000 at least from the archive, then the live feed after one merge", st)
	}
}

// TestArchiveURL: archive= takes a log URL and join= its history
// positions; without an archive seq: and time: are refused; an archive
// that is not a log is refused.
func TestArchiveURL(t *testing.T) {
	good := "mcast://239.1.2.3:7000?archive=" + url.QueryEscape("logd://127.0.0.1:9092/t?partition=0")
	for _, c := range []struct {
		raw  string
		join string
		err  string
	}{
		{good + "&join=earliest", "earliest", ""},
		{good + "&join=seq:42", "seq:42", ""},
		{good + "&join=time:2025-01-02T15:04:05Z", "time:2025-01-02T15:04:05Z", ""},
		{good, "live", ""},
		{good + "&join=seq:0", "", `join="seq:0": want live, earliest, seq:N or time:T`},
		{"mcast://239.1.2.3:7000?join=seq:5", "", `join="seq:5": needs archive=URL`},
		{"mcast://239.1.2.3:7000?join=time:2025-01-02T15:04:05Z", "", `needs archive=URL`},
		{"mcast://239.1.2.3:7000?archive=mcast://239.1.2.4:7000", "", "cannot be read at positions"},
		{"mcast://239.1.2.3:7000?archive=nats://x/y", "", `archive="nats://x/y"`},
	} {
		u, err := url.Parse(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseURL(u)
		switch {
		case c.err != "":
			if err == nil || !errors.Is(err, transport.ErrBadURL) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.raw, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.raw, err)
		case cfg.Archive.Join.String() != c.join || cfg.Receiver.Join != reliable.JoinLive:
			t.Errorf("%s: archive join %v, engine join %v; want %s and live", c.raw, cfg.Archive.Join, cfg.Receiver.Join, c.join)
		}
	}
}

// TestArchiveUnreachable: a subscriber whose archive cannot be reached
// fails to start, saying so.
func TestArchiveUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := testConfig(t)
	cfg.Archive.URL = "logd://" + addr + "/t"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := NewSubscriber(ctx, cfg); err == nil {
		s.Close()
		t.Fatal("a subscriber started with an archive nobody serves")
	} else if !strings.Contains(err.Error(), "archive logd://"+addr+"/t") {
		t.Fatalf("error %q does not name the archive", err)
	}
}

// TestParseJoin: what Join.String writes, ParseJoin reads.
func TestParseJoin(t *testing.T) {
	for _, j := range []Join{JoinLive(), JoinEarliest(), JoinSeq(7), JoinTime(time.Date(2025, 1, 2, 15, 4, 5, 6, time.UTC))} {
		got, err := ParseJoin(j.String())
		if err != nil || got != j {
			t.Errorf("%v: read back %v, %v", j, got, err)
		}
	}
	for _, bad := range []string{"", "latest", "seq:", "seq:-1", "seq:0", "time:yesterday", "seq:1x"} {
		if _, err := ParseJoin(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseJoin: any text is a Join that reads back the same, or an
// error.
func FuzzParseJoin(f *testing.F) {
	for _, s := range []string{"live", "earliest", "seq:5", "time:2025-01-02T15:04:05Z", "seq:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJoin(s)
		if err != nil {
			return
		}
		back, err := ParseJoin(j.String())
		if err != nil || !back.time.Equal(j.time) || back.kind != j.kind || back.seq != j.seq {
			t.Fatalf("%q: %v reads back as %v, %v", s, j, back, err)
		}
	})
}

// flakyLog is a Log whose first fails Reads fail.
type flakyLog struct {
	transport.Log
	mu    sync.Mutex
	fails int
}

func (l *flakyLog) Read(ctx context.Context, stream transport.StreamID, pos uint64) ([]transport.Message, error) {
	l.mu.Lock()
	fail := l.fails > 0
	l.fails--
	l.mu.Unlock()
	if fail {
		return nil, errors.New("flaky: connection reset")
	}
	return l.Log.Read(ctx, stream, pos)
}

// TestArchiveReadErrorRetried: reads of the archive that fail (here the
// first three) are tried again: the subscriber paused beyond the window
// still gets every message, with no gap, and counts the errors. (Each
// failed read used to give the archive up at once: a gap with the
// engine's reason.)
func TestArchiveReadErrorRetried(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender = reliable.SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * reliable.DefaultMTU}
	addr := startLogd(t)
	raw := startRecorder(t, cfg, addr, "flaky")
	scfg := cfg
	scfg.Queue, scfg.RecvBuffer = 2, 64<<10
	scfg.Archive.URL = raw
	scfg.Archive.Open = func(ctx context.Context) (transport.Log, error) {
		l, err := kafka.OpenLog(ctx, kafka.Config{Brokers: []string{addr}, Topic: "flaky"})
		if err != nil {
			return nil, err
		}
		return &flakyLog{Log: l, fails: 3}, nil
	}
	s := mustSub(t, scfg)
	p := mustPub(t, cfg)
	a := pausePastWindow(t, s, p)
	st := s.Stats()
	if len(a.gaps) != 0 || st.GapSeqs == 0 || st.Archive.Errors == 0 {
		t.Fatalf("gaps %v, engine gaps %d, archive %+v: want the pause beyond the window filled from the archive despite its errors", a.gaps, st.GapSeqs, st.Archive)
	}
}

// receiveToEnd takes s's events into an accountant until the stream
// ends; an error of Receive fails the test.
func receiveToEnd(t *testing.T, ctx context.Context, s *Subscriber) *accountant {
	t.Helper()
	var a accountant
	for {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("last message %d: %v; stats %+v", a.lastIndex, err, s.Stats().Archive)
		}
		if ev.Kind == transport.EventStreamEnd {
			return &a
		}
		a.add(t, &ev)
	}
}
