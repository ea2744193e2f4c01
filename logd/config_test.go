package logd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/auth"
	"github.com/brokerless/brokerless/logd/storage"
)

// TestConfigErrors: every bad field is reported as a *ConfigError naming
// it, with the value and what is allowed.
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Storage.Dir = "" }, `logd: bad config: Storage.Dir "": required`},
		{func(c *Config) { c.DefaultPartitions = -3 }, "logd: bad config: DefaultPartitions -3: must be ≥ 1"},
		{func(c *Config) { c.MaxRequestBytes = 100 }, "logd: bad config: MaxRequestBytes 100: must be ≥ 1024"},
		{func(c *Config) { c.MaxUnauthenticatedRequestBytes = 1000 }, "logd: bad config: MaxUnauthenticatedRequestBytes 1000: must be in [1024, MaxRequestBytes (104857600)]"},
		{func(c *Config) { c.MaxRequestBytes, c.MaxUnauthenticatedRequestBytes = 4096, 4097 }, "logd: bad config: MaxUnauthenticatedRequestBytes 4097: must be in [1024, MaxRequestBytes (4096)]"},
		{func(c *Config) { c.MaxRequestBytes, c.MaxInFlightRequestBytes = 4096, 8191 }, "logd: bad config: MaxInFlightRequestBytes 8191: must be ≥ 2 × the largest request (8192)"},
		{func(c *Config) { c.RequestTimeout = -time.Second }, "logd: bad config: RequestTimeout -1s: must be > 0"},
		{func(c *Config) { c.MaxConnections = -1 }, "logd: bad config: MaxConnections -1: must be ≥ 1"},
		{func(c *Config) { c.MaxConnectionsPerIP = -1 }, "logd: bad config: MaxConnectionsPerIP -1: must be ≥ 1"},
		{func(c *Config) { c.MaxGroupBytes = 1 }, "logd: bad config: MaxGroupBytes 1: must be ≥ 1048576"},
		{func(c *Config) { c.MaxFetchFiles = -1 }, "logd: bad config: MaxFetchFiles -1: must be ≥ 1"},
		{func(c *Config) { c.MaxFetchBytes, c.MaxCopiedFetchBytes = 200<<20, 150<<20 }, "logd: bad config: MaxCopiedFetchBytes 157286400: must be ≥ the largest fetch answer and request (209715200)"},
		{func(c *Config) { c.IdleTimeout = -time.Second }, "logd: bad config: IdleTimeout -1s: must be > 0"},
		{func(c *Config) { c.WarnLogGap = -time.Second }, "logd: bad config: WarnLogGap -1s: must be > 0"},
		{func(c *Config) { c.MaxTopics = -1 }, "logd: bad config: MaxTopics -1: must be ≥ 1"},
		{func(c *Config) { c.MaxFetchBytes = -1 }, "logd: bad config: MaxFetchBytes -1: must be ≥ 1"},
		{func(c *Config) { c.AdvertisedPort = 70000 }, "logd: bad config: AdvertisedPort 70000: must be in [0, 65535]"},
		{func(c *Config) { c.MinSessionTimeout, c.MaxSessionTimeout = time.Minute, time.Second }, "logd: bad config: MaxSessionTimeout 1s: must be ≥ the minimum session timeout (1m0s)"},
		{func(c *Config) { c.MaxRebalanceTimeout = time.Second }, "logd: bad config: MaxRebalanceTimeout 1s: must be ≥ the minimum session timeout (6s)"},
	}
	for _, tc := range cases {
		cfg := Config{Storage: storage.Config{Dir: t.TempDir()}}
		tc.mutate(&cfg)
		_, err := New(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrBadConfig) || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

type fakeSettingError struct{}

func (fakeSettingError) Error() string { return "storage: bad config: FsyncInterval -1s: must be > 0" }
func (fakeSettingError) Setting() (string, any, string) {
	return "FsyncInterval", -time.Second, "must be > 0"
}

// TestNestConfigError: a typed error of storage.Config names its field as
// logd.Config reaches it.
func TestNestConfigError(t *testing.T) {
	err := nestConfigError("Storage.", fmt.Errorf("opening: %w", fakeSettingError{}))
	var se setting
	if !errors.As(err, &se) {
		t.Fatal("no Setting")
	}
	if f, v, w := se.Setting(); f != "Storage.FsyncInterval" || v != -time.Second || w != "must be > 0" {
		t.Fatalf("Setting() = %s %v %s", f, v, w)
	}
	if !errors.Is(err, fakeSettingError{}) {
		t.Fatal("the storage error is not in the chain")
	}
	// Config.Auth's errors likewise, from New, before the directory
	// is made.
	dir := filepath.Join(t.TempDir(), "data")
	_, err = New(Config{Storage: storage.Config{Dir: dir}, Auth: auth.Config{Users: auth.NewUsers(), Mechanisms: []string{"GSSAPI"}}})
	if !errors.As(err, &se) || !errors.Is(err, auth.ErrBadConfig) {
		t.Fatalf("a bad Auth.Mechanisms: %v", err)
	}
	if f, v, _ := se.Setting(); f != "Auth.Mechanisms" || v != "GSSAPI" {
		t.Fatalf("Setting() = %s %v", f, v)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the data directory was made (or %v) for a bad config", err)
	}
	plain := errors.New("disk on fire")
	if nestConfigError("Storage.", plain) != plain {
		t.Fatal("an error without Setting was changed")
	}
}

// TestMaxRebalanceTimeoutReachesGroups: Config.MaxRebalanceTimeout
// lowers the rebalance timeouts members ask for. A member asking for a
// day never rejoins; the rebalance a new member starts completes without
// it once MaxRebalanceTimeout has passed, not after a day (or the
// default 5 min).
func TestMaxRebalanceTimeoutReachesGroups(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MinSessionTimeout, c.MaxRebalanceTimeout = 100*time.Millisecond, 300*time.Millisecond
	})
	stableGroup(t, ts, "g")
	b := dial(t, ts.addr)
	if err := writeRequest(b, kmsg.JoinGroup.Int16(), 3, joinBody("g", "", 24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if jr := readJoin(t, b); jr.ErrorCode != 0 || jr.Generation != 2 || len(jr.Members) != 1 {
		t.Fatalf("the new member's join: error %d, generation %d, %d members; want 0, 2, 1 (the silent member removed)", jr.ErrorCode, jr.Generation, len(jr.Members))
	}
}
