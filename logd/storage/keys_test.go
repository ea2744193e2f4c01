package storage

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestCompactedTopicNeedsKeys: a compacted topic refuses a batch with a
// record without a key (an empty key is a key), compressed or not, as
// Kafka's LogValidator.validateKey does: the whole batch, with a
// *RecordsError naming every keyless record, nothing of it appended. A
// topic that only deletes takes the same batch.
func TestCompactedTopicNeedsKeys(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, testConfig(t, clk))
	defer s.Close()
	for _, name := range []string{"compact", "compact,delete", "delete"} {
		policy, err := ParseCleanupPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateTopic(fmt.Sprintf("t-%d", policy), 1, TopicConfig{Cleanup: policy}); err != nil {
			t.Fatal(err)
		}
	}
	batch := func(codec int, keys ...[]byte) []byte {
		spec := batchSpec{codec: codec, ts: clk.ms(), pid: -1, epoch: -1, firstSeq: -1}
		for _, k := range keys {
			spec.recs = append(spec.recs, rec{key: k, value: []byte("v")})
		}
		return makeBatch(t, spec)
	}
	k := []byte("k")
	for _, codec := range []int{codecNone, codecGzip, codecSnappy, codecLZ4, codecZstd} {
		for _, policy := range []CleanupPolicy{CleanupCompact, CleanupCompactDelete, CleanupDelete} {
			l, err := s.Partition(fmt.Sprintf("t-%d", policy), 0)
			if err != nil {
				t.Fatal(err)
			}
			end := l.EndOffset()
			_, err = l.Append(batch(codec, k, nil, k, nil))
			if !policy.compacts() {
				if err != nil {
					t.Errorf("codec %d, %v: keyless records refused: %v", codec, policy, err)
				}
				continue
			}
			var re *RecordsError
			if !errors.Is(err, ErrInvalidBatch) || !errors.As(err, &re) || !reflect.DeepEqual(re.Records, []int32{1, 3}) {
				t.Errorf("codec %d, %v: keyless records at 1 and 3: %v, want a RecordsError naming them", codec, policy, err)
			}
			if l.EndOffset() != end {
				t.Errorf("codec %d, %v: a refused batch was appended (end %d, was %d)", codec, policy, l.EndOffset(), end)
			}
			if _, err := l.Append(batch(codec, k, []byte{}, k)); err != nil {
				t.Errorf("codec %d, %v: keyed records (one key empty) refused: %v", codec, policy, err)
			}
		}
	}
}
