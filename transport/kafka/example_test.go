package kafka_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/kafka"
)

// startLogd runs a logd in this process over a temporary directory, as
// `brokerless logd` would, and returns its address and how to stop it.
func startLogd() (addr string, stop func()) {
	dir, err := os.MkdirTemp("", "logd-example")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: dir}})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	return ln.Addr().String(), func() {
		srv.Close()
		os.RemoveAll(dir)
	}
}

// Opening logd:// through transport.Open: the path is the topic; the
// subscriber reads from the earliest record.
func Example_open() {
	addr, stop := startLogd()
	defer stop()
	ctx := context.Background()

	ep, err := transport.Open(ctx, "logd://"+addr+"/prices")
	if err != nil {
		log.Fatal(err)
	}
	pub, err := ep.Publisher(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer pub.Close()
	for _, tick := range []string{"AAPL 189.50", "AAPL 189.52"} {
		if err := pub.Publish(ctx, transport.Message{Key: []byte("AAPL"), Payload: []byte(tick)}); err != nil {
			log.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil { // acks=all: on disk
		log.Fatal(err)
	}

	sub, err := ep.Subscriber(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	fmt.Println("semantics:", sub.Semantics())
	for n := 0; n < 2; {
		ev, err := sub.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Kind {
		case transport.EventStreamStart:
			fmt.Printf("stream %s from offset %d\n", ev.Start.Stream, ev.Start.FirstSeq)
		case transport.EventMessage:
			fmt.Printf("%s offset %d: %s\n", ev.Message.Stream, ev.Message.Seq, ev.Message.Payload)
			n++
		case transport.EventGap:
			fmt.Println(ev.Gap)
		}
	}
	// Output:
	// semantics: ordered|gap-reports|deduplicated|durable|replay
	// stream prices/0 from offset 0
	// prices/0 offset 0: AAPL 189.50
	// prices/0 offset 1: AAPL 189.52
}

// Publishing with a receipt: done learns the partition and offset where
// the message landed, once logd has it durably.
func ExamplePublisher_PublishReceipt() {
	addr, stop := startLogd()
	defer stop()
	ctx := context.Background()

	pub, err := kafka.NewPublisher(ctx, kafka.Config{Brokers: []string{addr}, Topic: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	defer pub.Close()
	landed := make(chan transport.Receipt, 1)
	err = pub.PublishReceipt(ctx, transport.Message{Payload: []byte("order 1")}, func(r transport.Receipt, err error) {
		if err != nil {
			log.Fatal(err)
		}
		landed <- r // done must not block: the channel has room
	})
	if err != nil {
		log.Fatal(err)
	}
	r := <-landed
	fmt.Printf("landed in %s at offset %d\n", r.Stream, r.Seq)
	// Output:
	// landed in orders/0 at offset 0
}

// Consuming in a group with Ack: what the member acknowledged is
// committed when it closes, so the next member of the group starts
// after it; what it received but did not acknowledge is delivered
// again.
func ExampleGroupSubscriber_Ack() {
	addr, stop := startLogd()
	defer stop()
	ctx := context.Background()

	pub, err := transport.OpenPublisher(ctx, "logd://"+addr+"/jobs")
	if err != nil {
		log.Fatal(err)
	}
	for _, job := range []string{"resize a.png", "resize b.png", "resize c.png"} {
		if err := pub.Publish(ctx, transport.Message{Payload: []byte(job)}); err != nil {
			log.Fatal(err)
		}
	}
	pub.Close()

	work := func(take, finish int) {
		sub, err := transport.OpenSubscriber(ctx, "logd://"+addr+"/jobs?group=workers")
		if err != nil {
			log.Fatal(err)
		}
		defer sub.Close() // commits what was acknowledged
		acks := sub.(transport.Acknowledger)
		for n := 0; n < take; {
			ev, err := sub.Receive(ctx)
			if err != nil {
				log.Fatal(err)
			}
			if ev.Kind != transport.EventMessage {
				continue
			}
			n++
			fmt.Printf("got %s (offset %d)", ev.Message.Payload, ev.Message.Seq)
			if n <= finish {
				if err := acks.Ack(ctx, ev.Message.Stream, ev.Message.Seq); err != nil {
					log.Fatal(err)
				}
				fmt.Print(", done")
			}
			fmt.Println()
		}
	}
	work(2, 1) // takes two jobs, finishes one
	work(2, 2) // the next member gets the unfinished one again
	// Output:
	// got resize a.png (offset 0), done
	// got resize b.png (offset 1)
	// got resize b.png (offset 1), done
	// got resize c.png (offset 2), done
}
