package main

import (
	"os"
	"testing"

	"github.com/brokerless/brokerless/bench/matrix"
)

// TestMain lets this test binary be the child a run starts inside its
// network namespace (as the bench binary is).
func TestMain(m *testing.M) {
	matrix.MaybeNetnsChild()
	os.Exit(m.Run())
}
