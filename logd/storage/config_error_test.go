package storage

import (
	"errors"
	"testing"
	"time"
)

// TestConfigErrorsNameTheField: every bad Config or TopicConfig value is
// refused with a *ConfigError naming the field (as the Go field is
// called), its value and what it allows, wrapping ErrBadConfig, so a
// command line can name its flag.
func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		value any
		set   func(*Config)
	}{
		{"Dir", "", func(c *Config) { c.Dir = "" }},
		{"Fsync", FsyncPolicy(7), func(c *Config) { c.Fsync = 7 }},
		{"FsyncInterval", -time.Second, func(c *Config) { c.FsyncInterval = -time.Second }},
		{"MaxProducers", -1, func(c *Config) { c.MaxProducers = -1 }},
		{"ProducerExpiry", -time.Second, func(c *Config) { c.ProducerExpiry = -time.Second }},
		{"MaintenanceInterval", -2 * time.Second, func(c *Config) { c.MaintenanceInterval = -2 * time.Second }},
		{"CompactMaxKeys", -1, func(c *Config) { c.CompactMaxKeys = -1 }},
		{"MaxPartitions", -1, func(c *Config) { c.MaxPartitions = -1 }},
		{"MaxGroups", -1, func(c *Config) { c.MaxGroups = -1 }},
		{"MaxOffsetMetadata", 70000, func(c *Config) { c.MaxOffsetMetadata = 70000 }},
		{"MaxOffsetBytes", int64(-1), func(c *Config) { c.MaxOffsetBytes = -1 }},
		{"SegmentBytes", int64(100), func(c *Config) { c.SegmentBytes = 100 }},
		{"SegmentAge", -2 * time.Second, func(c *Config) { c.SegmentAge = -2 * time.Second }},
		{"IndexIntervalBytes", -1, func(c *Config) { c.IndexIntervalBytes = -1 }},
		{"RetentionBytes", int64(-2), func(c *Config) { c.RetentionBytes = -2 }},
		{"RetentionAge", -2 * time.Second, func(c *Config) { c.RetentionAge = -2 * time.Second }},
		{"Cleanup", CleanupPolicy(9), func(c *Config) { c.Cleanup = 9 }},
		{"DeleteRetention", -time.Second, func(c *Config) { c.DeleteRetention = -time.Second }},
		{"MaxBatchBytes", 10, func(c *Config) { c.MaxBatchBytes = 10 }},
	} {
		cfg := Config{Dir: t.TempDir()}
		tc.set(&cfg)
		_, err := Open(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want a *ConfigError wrapping ErrBadConfig", tc.field, err)
			continue
		}
		field, value, want := ce.Setting()
		if field != tc.field || value != tc.value || want == "" {
			t.Errorf("%s: Setting() = %q, %v, %q; want %q, %v and what it allows", tc.field, field, value, want, tc.field, tc.value)
		}
	}
	err := (&ConfigError{"FsyncInterval", -time.Second, "must be > 0"}).Error()
	if err != "storage: bad config: FsyncInterval -1s: must be > 0" {
		t.Errorf("Error() = %q", err)
	}

	s := mustOpen(t, Config{Dir: t.TempDir(), MaintenanceInterval: -1})
	defer s.Close()
	var ce *ConfigError
	if err := s.CreateTopic("t", 1, TopicConfig{SegmentBytes: 10}); !errors.As(err, &ce) || ce.Field != "SegmentBytes" {
		t.Errorf("a topic's bad override: %v, want a *ConfigError for SegmentBytes", err)
	}
	for _, parse := range []func() error{
		func() error { _, err := ParseFsyncPolicy("sometimes"); return err },
		func() error { _, err := ParseCleanupPolicy("forever"); return err },
	} {
		if err := parse(); !errors.As(err, &ce) || ce.Value == "" {
			t.Errorf("parsing a bad policy: %v, want a *ConfigError", err)
		}
	}
}
