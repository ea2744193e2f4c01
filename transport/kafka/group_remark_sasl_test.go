package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/auth"
)

// TestRemarkCommitOverSASL: commitRemarks sends its OffsetCommit, and
// its FindCoordinator, on the client's connections, authenticated as
// the client's are: on a logd that requires SASL a request on a
// connection of its own would be refused.
func TestRemarkCommitOverSASL(t *testing.T) {
	us := auth.NewUsers()
	cred, err := auth.NewCredential(auth.ScramSHA256, "pw", []byte("salt-of-u"), auth.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	u := &auth.User{Name: "u", SCRAM: map[string]auth.Credential{auth.ScramSHA256: cred}}
	for _, s := range []string{"admin:*", "produce:*", "consume:*", "group:*"} {
		gr, err := auth.ParseGrant(s)
		if err != nil {
			t.Fatal(err)
		}
		u.Grants = append(u.Grants, gr)
	}
	if err := us.Put(u); err != nil {
		t.Fatal(err)
	}
	addr := startLogd(t, fastGroups, func(c *logd.Config) { c.Auth = auth.Config{Users: us} })
	sasl := kgo.SASL(scram.Auth{User: "u", Pass: "pw"}.AsSha256Mechanism())
	cl := newClient(t, addr, sasl)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "loss", 1, 1
	ct.Topics = append(ct.Topics, rt)
	cresp, err := ct.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(cresp.Topics[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "loss", Value: fmt.Appendf(nil, "%d", i)})
	}
	g, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "loss", Group: "g",
		Options: append([]kgo.Opt{sasl}, groupOpts...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	stream := messages(receiveUntil(t, g, untilMessages(10)))[0].Stream
	rs := remarkSet{offsets: map[int32]kgo.EpochOffset{stream.Partition: {Epoch: -1, Offset: 7}}}
	rs.member, rs.gen = g.cl.GroupMetadata()
	if err := g.commitRemarks(ctx, rs); err != nil {
		t.Fatalf("commitRemarks on a logd requiring SASL: %v", err)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = "loss", []int32{stream.Partition}
	of.Topics = append(of.Topics, ot)
	oresp, err := of.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := oresp.Topics[0].Partitions[0].Offset; c != 7 {
		t.Fatalf("commitRemarks of offset 7 over SASL: the group's commit is %d", c)
	}
}
