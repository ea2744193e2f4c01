package logd

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/groups"
)

// TestCoordinatorCountersCoverStats: every counter of the coordinator's
// Stats is on the metrics page once, each under a name of its own.
func TestCoordinatorCountersCoverStats(t *testing.T) {
	var st groups.Stats
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(i + 1))
	}
	seen, names := map[uint64]bool{}, map[string]bool{}
	for _, c := range coordinatorCounters {
		n := c.v(st)
		if seen[n] || names[c.name] {
			t.Errorf("%s: field %d or its name reported twice", c.name, n)
		}
		seen[n], names[c.name] = true, true
	}
	if len(seen) != v.NumField() {
		t.Errorf("%d of groups.Stats' %d counters on the metrics page", len(seen), v.NumField())
	}
}

// TestCoordinatorMetrics: a group that a franz-go consumer joins, and a
// join refused for its metadata's size, show on the metrics page.
func TestCoordinatorMetrics(t *testing.T) {
	ts := startServer(t, t.TempDir())
	admin := newClient(t, ts.addr)
	createTopic(t, admin, "orders", 1)
	produceN(t, admin, "orders", "x", 10)
	member := newClient(t, ts.addr, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	consume(t, member, 10)

	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "g2", "consumer", 10000, 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", make([]byte, groups.DefaultMaxMemberBytes+1)
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err == nil {
		t.Fatalf("a join with %d bytes of metadata accepted", len(p.Metadata))
	}

	page := metricsPage(t, ts.Server)
	for _, want := range []string{"logd_group_rebalances_total 1\n", "logd_group_generations_total 1\n", "logd_group_members_too_large_total 1\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(grepLines(page, "logd_group"))
	}
}

// grepLines returns the lines of s that hold sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			fmt.Fprintln(&b, l)
		}
	}
	return b.String()
}
