package multicast

import (
	"context"
	"errors"
	"testing"

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
