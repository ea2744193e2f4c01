package faultnet_test

import (
	"fmt"
	"time"

	"github.com/brokerless/brokerless/transport/faultnet"
)

// An Injector is driven with explicit times: here datagram 2 is lost on
// purpose and every datagram takes 1ms.
func ExampleInjector() {
	in, err := faultnet.NewInjector(faultnet.Faults{
		Delay: time.Millisecond,
		Drop:  func(b []byte) bool { return b[0] == 2 },
	})
	if err != nil {
		panic(err)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		in.Push(start.Add(time.Duration(i)*time.Microsecond), []byte{byte(i)}, nil)
	}
	next, _ := in.NextDue()
	fmt.Println("first due after", next.Sub(start))
	for {
		b, _, ok := in.Pop(start.Add(time.Second))
		if !ok {
			break
		}
		fmt.Println("datagram", b[0])
	}
	fmt.Printf("%+v\n", in.Stats())
	// Output:
	// first due after 1ms
	// datagram 0
	// datagram 1
	// datagram 3
	// {Passed:3 Dropped:1 Duplicated:0 Reordered:0 Delayed:3 Overflow:0}
}
