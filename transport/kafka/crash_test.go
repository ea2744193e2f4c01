package kafka

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// The consumer child of TestGroupConsumerCrash: envCrash holds "addr
// topic group take ack".
const envCrash = "BROKERLESS_KAFKA_TEST_CRASH"

// runConsumerChild joins the group, receives take messages, acknowledges
// the first ack of them, says "acked" and waits to be killed. It
// commits every 100 ms (kgo's least), so the parent sees the acknowledgement
// committed before it kills.
func runConsumerChild() int {
	var addr, topic, group string
	var take, ack int
	if _, err := fmt.Sscan(os.Getenv(envCrash), &addr, &topic, &group, &take, &ack); err != nil {
		fmt.Fprintln(os.Stderr, envCrash, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cfg := Config{Brokers: []string{addr}, Topic: topic, Group: group,
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(100 * time.Millisecond)}, groupOpts...)}
	sub, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var got []transport.Message
	for len(got) < take {
		ev, err := sub.Receive(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if ev.Kind == transport.EventMessage {
			got = append(got, ev.Message)
		}
	}
	last := got[ack-1]
	if err := sub.Ack(ctx, last.Stream, last.Seq); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("acked", last.Seq)
	<-ctx.Done() // killed before this
	return 1
}

// TestGroupConsumerCrash: a group member takes 100 messages, acknowledges
// the first 50 and is killed with SIGKILL, never closed. The other member
// of its group gets the 50 it did not acknowledge — exactly those — and
// nothing is lost: each of the 100 was acknowledged by one member or the
// other.
func TestGroupConsumerCrash(t *testing.T) {
	const (
		topic, group = "crash", "workers"
		n, acked     = 100, 50
	)
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, topic, 1)
	cl := newClient(t, addr)
	for i := range n {
		produce(t, cl, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envChild+"=consumer", fmt.Sprintf("%s=%s %s %s %d %d", envCrash, addr, topic, group, n, acked))
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != fmt.Sprintf("acked %d\n", acked-1) {
		t.Fatalf("consumer child said %q: %v", line, err)
	}
	waitCommitted(t, addr, group, topic, acked)

	// The other member joins while the child still owns the partition,
	// then the child dies.
	ctx := context.Background()
	other, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: topic, Group: group, Options: groupOpts})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	evs := receiveUntil(t, other, untilMessages(n-acked))
	if evs[0].Kind != transport.EventStreamStart || evs[0].Start.FirstSeq != acked {
		t.Errorf("first event %v %+v, want a stream-start at %d", evs[0].Kind, evs[0].Start, acked)
	}
	ms := messages(evs)
	for i, m := range ms {
		if want := acked + i; m.Seq != uint64(want) || string(m.Payload) != strconv.Itoa(want) {
			t.Fatalf("message %d: offset %d %q, want %d", i, m.Seq, m.Payload, want)
		}
	}
	last := ms[len(ms)-1]
	if err := other.Ack(ctx, last.Stream, last.Seq); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, group, topic, 0); c != n {
		t.Fatalf("committed %d after the other member acknowledged the rest, want %d", c, n)
	}
}

// waitCommitted waits until group has committed offset want of topic's
// partition 0.
func waitCommitted(t testing.TB, addr, group, topic string, want int64) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testDeadline)
	for {
		c := committed(t, addr, group, topic, 0)
		if c == want {
			return
		}
		if c > want {
			t.Fatalf("group %s committed %d, beyond the %d acknowledged", group, c, want)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("group %s committed %d, not the %d acknowledged, in %v", group, c, want, testDeadline)
		}
	}
}
