package store

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestActiveBounded: however many unexpired secrets an endpoint holds,
// at most MaxSecrets sign, the newest (last) ones; expired ones never.
func TestActiveBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &Endpoint{Secrets: []Secret{{Secret: "expired", Expires: now}}}
	var want []string
	for i := range 10 {
		s := fmt.Sprintf("s%d", i)
		e.Secrets = append(e.Secrets, Secret{Secret: s, Expires: now.Add(time.Hour)})
		want = append(want, s)
	}
	e.Secrets = append(e.Secrets, Secret{Secret: "current"})
	want = append(want, "current")
	if got := e.Active(now); !slices.Equal(got, want[len(want)-MaxSecrets:]) {
		t.Errorf("Active = %v, want %v", got, want[len(want)-MaxSecrets:])
	}
	e.Secrets = e.Secrets[:3]
	if got := e.Active(now); !slices.Equal(got, []string{"s0", "s1"}) {
		t.Errorf("Active = %v, want [s0 s1]", got)
	}
}
