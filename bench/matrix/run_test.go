package matrix

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// missingPeer is a peer this machine lacks.
type missingPeer struct{ rawUDP }

func (missingPeer) Name() string     { return "missing" }
func (missingPeer) Baseline() string { return "raw-udp" }
func (missingPeer) Can(Options) error {
	return fmt.Errorf("%w: peer-binary not found", ErrUnavailable)
}

func tinySettings() Settings {
	s := SmokeSettings()
	s.Kinds = []Kind{Latency}
	return s
}

// A missing peer is "not available: …" in the table, and an error when
// peers are required (BROKERLESS_INTEROP=1).
func TestMissingPeer(t *testing.T) {
	cs := []Contender{rawUDP{}, missingPeer{}}
	rep, err := Run(context.Background(), tinySettings(), cs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Result("missing", rep.Cells[0].ID())
	if rr == nil || rr.Status != "not available: peer-binary not found" {
		t.Fatalf("missing peer's result: %+v", rr)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	if !strings.Contains(b.String(), "| missing | not available [1] |") || !strings.Contains(b.String(), "[1] not available: peer-binary not found") {
		t.Errorf("table does not say the peer is missing:\n%s", b.String())
	}
	_, err = Run(context.Background(), tinySettings(), cs, true, nil)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("with peers required: %v, want ErrUnavailable", err)
	}
}
