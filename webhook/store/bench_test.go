package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/latency"
)

// BenchmarkClaimComplete: the store's side of one delivery on SQLite, as
// the dispatcher drives it on one endpoint (the default Config refills
// at half its queue of 64): claims of 32, each made while the 32 claimed
// before are still leased (queued or being attempted), which are then
// completed in one transaction. One op is one delivery
// claimed and completed. The outbox (1024 events) is made pending again,
// off the clock, whenever it runs dry. Reported beside the time: the
// process's CPU time per delivery.
func BenchmarkClaimComplete(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, "sqlite:"+b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.CreateEndpoint(ctx, &Endpoint{ID: "ep_b", URL: "http://127.0.0.1:1/", Enabled: true,
		Secrets: []Secret{{Secret: "whsec_b"}}, Created: t0, Updated: t0}); err != nil {
		b.Fatal(err)
	}
	for i := range 1024 {
		ev := &Event{ID: fmt.Sprintf("msg_%04d", i), Type: "t", Payload: []byte(`{"n":1}`), Created: t0}
		if _, err := s.InsertEvent(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	const batch, held = 32, 36
	var queue []*Job
	now, attempt := t0, 0
	complete := func(jobs []*Job) {
		cs := make([]*Completion, len(jobs))
		for i, j := range jobs {
			attempt++
			cs[i] = &Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: StatusFailed, NextAttempt: now,
				Attempt: Attempt{ID: fmt.Sprintf("atmpt_%d", attempt), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
					Started: now, Duration: time.Millisecond, StatusCode: 500}}
		}
		if err := s.Complete(ctx, cs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu, off := latency.ProcessCPU(), time.Duration(0)
	for done := 0; done < b.N; {
		now = now.Add(time.Millisecond)
		jobs, err := s.Claim(ctx, ClaimRequest{Owner: "a", Now: now, Lease: time.Minute, Limit: batch, PerEndpoint: batch})
		if err != nil {
			b.Fatal(err)
		}
		queue = append(queue, jobs...)
		if len(jobs) == 0 || len(queue) > held {
			n := min(len(queue), batch)
			if len(jobs) == 0 {
				n = len(queue)
			}
			complete(queue[:n])
			queue, done = queue[n:], done+n
			if len(jobs) == 0 && n == 0 {
				b.StopTimer()
				c := latency.ProcessCPU()
				if _, err := s.Recover(ctx, "ep_b", t0, t0.Add(time.Second), now); err != nil {
					b.Fatal(err)
				}
				off += latency.ProcessCPU() - c
				b.StartTimer()
			}
		}
	}
	b.ReportMetric(float64((latency.ProcessCPU()-cpu-off).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
}
