package multicast

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestKeyedFeed: publisher and subscriber sharing a key deliver the
// feed, with loss recovered (NACKs are tagged too); subscribers without
// the key, or with another, deliver nothing and count what they drop.
func TestKeyedFeed(t *testing.T) {
	cfg := testConfig(t)
	cfg.Key = []byte("0123456789abcdef0123456789abcdef")
	lossy := cfg
	lossy.Faults.Loss, lossy.Faults.Seed = 0.05, 3
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
