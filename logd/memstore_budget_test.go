package logd

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerless/brokerless/logd/groups"
)

// TestMemoryStoreAccountsAsStorage: groups.MemoryStore and the durable
// store account the same commits at the same bytes, and refuse the same
// one for the same budget, with the same code.
func TestMemoryStoreAccountsAsStorage(t *testing.T) {
	const budget = 1200
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Storage.MaxOffsetBytes = budget })
	durable := ts.offsets
	mem := groups.NewMemoryStoreMax(budget)
	commits := []struct {
		group string
		offs  []groups.Committed
	}{
		{"g", []groups.Committed{{Topic: "t", Partition: 0, Offset: 1, Metadata: "meta"}, {Topic: "t", Partition: 1, Offset: 1, Metadata: ""}}},
		{"g", []groups.Committed{{Topic: "t", Partition: 0, Offset: 2, Metadata: "longer meta"}, {Topic: "t", Partition: 0, Offset: 3, Metadata: "m"}}}, // named twice: the last counts
		{"h", nil},
		{"h", []groups.Committed{{Topic: "topic", Partition: 5, Offset: 1, Metadata: "x"}}},
		{"g", []groups.Committed{{Topic: "u", Partition: 0, Offset: 1, Metadata: string(make([]byte, 300))}}}, // over the budget
		{"g", []groups.Committed{{Topic: "t", Partition: 1, Offset: 4, Metadata: "ab"}}},
	}
	for i, c := range commits {
		errD, errM := durable.Commit(c.group, c.offs), mem.Commit(c.group, c.offs)
		var kd, km *kerr.Error
		if errors.As(errD, &kd) != errors.As(errM, &km) || kd != km || (errD == nil) != (errM == nil) {
			t.Fatalf("commit %d: durable store %v, MemoryStore %v", i, errD, errM)
		}
		if d, m := ts.store.Offsets().Bytes(), mem.Bytes(); d != m {
			t.Fatalf("commit %d: durable store holds %d bytes, MemoryStore %d", i, d, m)
		}
	}
	if err := mem.Commit("g", []groups.Committed{{Topic: "u", Partition: 0, Offset: 1, Metadata: string(make([]byte, 300))}}); !errors.Is(err, kerr.InvalidCommitOffsetSize) {
		t.Fatalf("the MemoryStore's refusal: %v", err)
	}
}
