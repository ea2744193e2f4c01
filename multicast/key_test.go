package multicast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// TestKeyedFeed: publisher and subscriber sharing a key deliver the
// feed, with loss recovered (NACKs are tagged too); subscribers without
// the key, or with another, deliver nothing and count what they drop.
func TestKeyedFeed(t *testing.T) {
	cfg := testConfig(t)
	cfg.Key = []byte("0123456789abcdef0123456789abcdef")
	lossy := withFaults(cfg, faultnet.Faults{Loss: 0.05, Seed: 3})
	s := mustSub(t, lossy)
	noKey := cfg
	noKey.Key = nil
	wrong := cfg
	wrong.Key = []byte("fedcba9876543210fedcba9876543210")
	strangers := []*Subscriber{mustSub(t, noKey), mustSub(t, wrong)}
	p := mustPub(t, cfg)
	publishN(t, p, 0, 20_000, 64)
	idx, gaps := collect(t, s, 20_000, 20*time.Second)
	if len(gaps) > 0 || idx[19_999] != 19_999 {
		t.Fatalf("gaps %v", gaps)
	}
	if st := s.Stats(); st.Recovered == 0 || st.Unauthenticated != 0 {
		t.Fatalf("keyed subscriber: %+v", st.ReceiverStats)
	}
	if st := p.Stats(); st.NacksReceived == 0 || st.Unauthenticated != 0 {
		t.Fatalf("publisher: %+v", st.SenderStats)
	}
	for i, st := range []uint64{strangers[0].Stats().Foreign, strangers[1].Stats().Unauthenticated} {
		if got := strangers[i].Stats(); got.Delivered != 0 || st == 0 {
			t.Errorf("subscriber %d without the key: %+v", i, got.ReceiverStats)
		}
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "feed.key")
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(good, []byte("0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if key, err := ReadKeyFile(good); err != nil || string(key) != "0123456789abcdef" {
		t.Fatalf("%q %v", key, err)
	}
	for _, bad := range []string{short, filepath.Join(dir, "missing")} {
		if _, err := ReadKeyFile(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	ctx := context.Background()
	if _, err := transport.Open(ctx, fmt.Sprintf("mcast://239.1.2.3:7000?keyfile=%s", good)); err != nil {
		t.Errorf("keyfile parameter: %v", err)
	}
	if _, err := transport.Open(ctx, fmt.Sprintf("mcast://239.1.2.3:7000?keyfile=%s", short)); !errors.Is(err, transport.ErrBadURL) {
		t.Errorf("short keyfile: %v", err)
	}
}

// TestLongestNackRead: the publisher reads the longest NACK there is
// (255 ranges and the authentication trailer, reliable.MaxControlLen
// bytes) whole, and answers it with an NCF to the group.
func TestLongestNackRead(t *testing.T) {
	cfg := testConfig(t)
	cfg.Key = []byte("0123456789abcdef0123456789abcdef")
	spy := rawReceiver(t, cfg)
	// It reads nothing until the NCF is due, after some 400 datagrams
	// (data and heartbeats): with the kernel's default buffer they could
	// fill it and the NCF be dropped (seen once in CI, under -race).
	bufferSizes(spy, DefaultSocketBytes, 0, slog.New(slog.DiscardHandler))
	p := mustPub(t, cfg)
	id := p.Stream()
	publishN(t, p, 0, 600, 8)

	// A subscriber's engine that got every other message of the stream
	// (sealed by another holder of the key) NACKs 255 of its gaps.
	now := time.Now()
	s, err := reliable.NewSender(reliable.SenderConfig{Feed: id.Feed, Session: id.Session, Key: cfg.Key}, now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reliable.NewReceiver(reliable.ReceiverConfig{Key: cfg.Key, NackRanges: reliable.MaxWireRanges, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	h := &nackCatcher{}
	buf := make([]byte, reliable.DefaultMTU)
	for i := 0; i < 600; i++ {
		if _, err := s.Publish(now, &transport.Message{Payload: indexed(i, 8)}); err != nil {
			t.Fatal(err)
		}
		s.Flush()
		l, _, _ := s.NextOutgoing(now, buf)
		if i%2 == 0 {
			_ = r.HandleDatagram(now, netip.MustParseAddrPort("127.0.0.1:9"), buf[:l], h)
		}
	}
	r.Poll(now.Add(10*time.Millisecond), h)
	if len(h.nack) != reliable.MaxControlLen {
		t.Fatalf("NACK of %d bytes, want %d", len(h.nack), reliable.MaxControlLen)
	}

	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.WriteToUDPAddrPort(h.nack, p.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	_ = spy.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		n, _, err := spy.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("no NCF for the NACK: %v (publisher %+v)", err, p.Stats().SenderStats)
		}
		if hd, err := reliable.ParseHeader(buf[:n]); err == nil && hd.Type == reliable.TypeNcf && hd.Stream == id {
			break
		}
	}
	if st := p.Stats(); st.NacksReceived != 1 || st.Malformed+st.Unauthenticated != 0 {
		t.Fatalf("publisher: %+v", st.SenderStats)
	}
}

// nackCatcher keeps the last NACK a Receiver sends.
type nackCatcher struct{ nack []byte }

func (*nackCatcher) Deliver(*transport.Event)              {}
func (c *nackCatcher) SendNack(_ netip.AddrPort, b []byte) { c.nack = append(c.nack[:0], b...) }
func (*nackCatcher) SendStatus(netip.AddrPort, []byte)     {}
