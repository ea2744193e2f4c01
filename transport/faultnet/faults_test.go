package faultnet

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestFaultsValidate(t *testing.T) {
	tests := []struct {
		name  string
		f     Faults
		field string // "" if valid
	}{
		{"zero", Faults{}, ""},
		{"all set", Faults{Loss: 1, Duplicate: 0.5, Reorder: 0.1, ReorderDelay: time.Millisecond,
			Delay: time.Millisecond, Jitter: time.Millisecond, MaxHeld: 1, MaxHeldBytes: 1}, ""},
		{"loss above 1", Faults{Loss: 1.5}, "Loss"},
		{"loss negative", Faults{Loss: -0.1}, "Loss"},
		{"loss NaN", Faults{Loss: math.NaN()}, "Loss"},
		{"duplicate above 1", Faults{Duplicate: 2}, "Duplicate"},
		{"reorder NaN", Faults{Reorder: math.NaN()}, "Reorder"},
		{"reorder infinite", Faults{Reorder: math.Inf(1)}, "Reorder"},
		{"negative reorder delay", Faults{ReorderDelay: -1}, "ReorderDelay"},
		{"negative delay", Faults{Delay: -time.Second}, "Delay"},
		{"negative jitter", Faults{Jitter: -1}, "Jitter"},
		{"negative max held", Faults{MaxHeld: -1}, "MaxHeld"},
		{"negative max held bytes", Faults{MaxHeldBytes: -1}, "MaxHeldBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewInjector(tt.f)
			checkFaultsError(t, err, tt.field)
		})
	}
}

func checkFaultsError(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var fe *FaultsError
	if !errors.Is(err, ErrBadFaults) || !errors.As(err, &fe) {
		t.Fatalf("error %v: want a *FaultsError wrapping ErrBadFaults", err)
	}
	if fe.Field != field {
		t.Fatalf("error names field %q, want %q (%v)", fe.Field, field, err)
	}
}

func TestFaultsZero(t *testing.T) {
	tests := []struct {
		f    Faults
		zero bool
	}{
		{Faults{}, true},
		{Faults{Seed: 7, MaxHeld: 3, ReorderDelay: time.Second}, true},
		{Faults{Loss: 0.1}, false},
		{Faults{Duplicate: 0.1}, false},
		{Faults{Reorder: 0.1}, false},
		{Faults{Delay: 1}, false},
		{Faults{Jitter: 1}, false},
		{Faults{Drop: func([]byte) bool { return false }}, false},
	}
	for _, tt := range tests {
		if got := tt.f.Zero(); got != tt.zero {
			t.Errorf("%+v.Zero() = %v, want %v", tt.f, got, tt.zero)
		}
	}
}
