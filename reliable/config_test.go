package reliable

import (
	"errors"
	"testing"
	"time"
)

// TestConfigErrorsNameTheField: a bad Config value is reported as a
// *ConfigError naming the field, its value and what it allows, so a
// caller (the CLI) can name its own flag.
func TestConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		err   error
		field string
		value any
		want  string
	}{
		{senderErr(SenderConfig{Session: 1, MTU: 100000}), "MTU", 100000, "must be in [256, 65507]"},
		{senderErr(SenderConfig{Session: 1, HeartbeatMin: -time.Second}), "HeartbeatMin", -time.Second, "must be > 0"},
		{senderErr(SenderConfig{}), "Rand", nil, "is required when Session is 0"},
		{receiverErr(ReceiverConfig{Rand: fixedRand(0), ReorderFrames: 1000}), "ReorderFrames", 1000, "must be a power of two ≥ 2"},
		{receiverErr(ReceiverConfig{Rand: fixedRand(0), NackRanges: 300}), "NackRanges", 300, "must be in [1, 255]"},
	}
	for _, tt := range tests {
		var ce *ConfigError
		if !errors.As(tt.err, &ce) || !errors.Is(tt.err, ErrBadConfig) {
			t.Fatalf("%v: not a *ConfigError wrapping ErrBadConfig", tt.err)
		}
		field, value, want := ce.Setting()
		if field != tt.field || (tt.value != nil && value != tt.value) || want != tt.want {
			t.Errorf("got %q %v %q, want %q %v %q", field, value, want, tt.field, tt.value, tt.want)
		}
	}
}

func senderErr(cfg SenderConfig) error {
	_, err := NewSender(cfg, simEpoch)
	return err
}

func receiverErr(cfg ReceiverConfig) error {
	_, err := NewReceiver(cfg)
	return err
}
