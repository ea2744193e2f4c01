package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testListEventsPaging: pages of ListEvents, each starting after the
// last event of the one before (its Created and ID), list every event
// once, newest first, also when several share a creation time; before
// alone lists those created before it.
func testListEventsPaging(t *testing.T, s store.Store) {
	c := ctx(t)
	var want []string
	for i := range 7 {
		at := t0
		if i == 6 {
			at = t0.Add(time.Second)
		}
		event(t, s, fmt.Sprint("msg_", i), "a", at)
		want = append([]string{fmt.Sprint("msg_", i)}, want...)
	}
	var (
		got      []string
		before   time.Time
		beforeID string
	)
	for range 10 {
		page, err := s.ListEvents(c, before, beforeID, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, ev := range page {
			got = append(got, ev.ID)
		}
		last := page[len(page)-1]
		before, beforeID = last.Created, last.ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages of 2 listed %v, want %v", got, want)
	}
	evs, err := s.ListEvents(c, t0.Add(time.Second), "", 10)
	if err != nil || len(evs) != 6 || evs[0].ID != "msg_5" {
		t.Fatalf("events before t0+1s: %d, %v", len(evs), err)
	}
}
