package groups

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Many clients join, sync, heartbeat, commit and leave at once through
// the blocking API while the clock runs: run with -race. Each generation
// has one leader, each dynamic member gets what its leader assigned it,
// and when everyone has left the group is Empty with nothing waiting.
func TestConcurrentClients(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMembers = 64 })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				h.tick(20 * time.Millisecond)
				runtime.Gosched()
			}
		}
	}()
	checked := make(chan error, 1)
	go func() {
		for {
			if err := h.c.checkInvariants(); err != nil {
				checked <- err
				return
			}
			h.c.DescribeGroups(describeReq(5, testGroup))
			h.c.ListGroups(kmsg.NewPtrListGroupsRequest())
			h.c.Groups()
			select {
			case <-stop:
				checked <- nil
				return
			default:
				runtime.Gosched()
			}
		}
	}()

	const clients, rounds = 24, 40
	var gens generations
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { errs <- runClient(ctx, h, &gens, i, rounds) })
	}
	wg.Wait()
	close(stop)
	<-stopped
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("clients did not finish in time")
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	h.noWaiters()
	h.tick(time.Minute)
	h.mustState(StateEmpty)
	st := h.c.Stats()
	t.Logf("%d generations, %d rebalances, %d expired, %d fenced", st.Generations, st.Rebalances, st.Expired, st.Fenced)
}

// runClient behaves as a consumer: join (rejoining as told), sync,
// heartbeat and commit a while, sometimes leave and start over.
func runClient(ctx context.Context, h *harness, gens *generations, i, rounds int) error {
	version := int16(3 + i%7)
	var instance *string
	if i%4 == 0 && version >= 5 {
		instance = kmsg.StringPtr(fmt.Sprint("inst", i))
	}
	member := ""
	for round := range rounds {
		req := joinReq(version, member)
		req.InstanceID = instance
		jr := h.c.JoinGroup(ctx, req, fmt.Sprint("client", i), "host")
		if err := gens.record(testGroup, jr); err != nil {
			return err
		}
		switch jr.ErrorCode {
		case 0:
			member = jr.MemberID
		case kerr.MemberIDRequired.Code:
			member = jr.MemberID
			continue
		case kerr.RebalanceInProgress.Code:
			continue
		default:
			member = ""
			continue
		}
		assign := make(map[string]string)
		for _, m := range jr.Members {
			assign[m.MemberID] = "a:" + m.MemberID
		}
		sr := h.c.SyncGroup(ctx, syncReq(int16(i%6), member, jr.Generation, assign))
		switch sr.ErrorCode {
		case 0:
		case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
			member = ""
			continue
		default:
			continue
		}
		if instance == nil && string(sr.MemberAssignment) != "a:"+member {
			return fmt.Errorf("client %d generation %d: assignment %q", i, jr.Generation, sr.MemberAssignment)
		}
		for k := range 10 {
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = testGroup, member, jr.Generation, instance
			if code := h.c.Heartbeat(hb).ErrorCode; code != 0 {
				if code != kerr.RebalanceInProgress.Code && code != kerr.IllegalGeneration.Code {
					member = ""
				}
				break
			}
			if k%3 == 0 {
				h.c.OffsetCommit(commitReq(8, member, jr.Generation, int64(round), 2))
			}
			runtime.Gosched()
		}
		if (i+round)%5 == 0 && member != "" {
			h.c.LeaveGroup(leaveReq(3, member))
			member = ""
		}
	}
	if member != "" {
		h.c.LeaveGroup(leaveReq(3, member))
	}
	return nil
}
