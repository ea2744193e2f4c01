package kafka

import (
	"context"
	"testing"
	"time"
)

// TestRevokeAwaitsRewindCommit: a revocation that follows a data loss
// waits for the commit of the loss's reset point (commitRewind) to be
// answered before it returns and the partition goes to its next owner.
// That commit follows any commit in flight with the old mark, past the
// reset point; the revocation's own commit may have nothing to carry
// (the client counts the rewound mark as committed: see commitRewind),
// and a revocation that returned first would leave the old mark, should
// it land then, as the group's commit the next owner starts at.
func TestRevokeAwaitsRewindCommit(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"}), closeCommitted: make(chan struct{})}
	g.cl = offlineClient(t)
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	rewound := make(chan struct{})
	g.rewindDone = rewound
	returned := make(chan struct{})
	go func() {
		g.revoked(context.Background(), g.cl, map[string][]int32{"t": {0}})
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("the revocation returned before the commit of the loss's reset point was answered")
	case <-time.After(200 * time.Millisecond):
	}
	close(rewound)
	wait(t, returned, "the revocation's return")
}
