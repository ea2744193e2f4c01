// Package faultnet injects seeded, reproducible network faults — loss,
// duplication, reordering, delay and jitter of datagrams; delays, short
// reads and cut connections of streams — for tests, benchmarks and the
// CLI's --simulate-loss.
//
// The core is [Injector], a sans-IO queue: it takes datagrams and the
// current time, and gives back the datagrams that are due. It owns no
// socket and no goroutine and never reads the clock, so a test can drive
// it with a fake time and get the same decisions for the same seed every
// run. A Drop predicate gives targeted loss, for example "lose the
// datagram carrying sequence 1000". Everything held is bounded by
// MaxHeld and MaxHeldBytes, and every datagram is counted in [Stats]:
// passed, dropped or overflowed.
//
// [PacketConn] wraps a net.PacketConn (a UDP or multicast socket) with an
// Injector on the read side, the write side or both, and is itself a
// net.PacketConn, so it can be handed to code that knows nothing about
// faults:
//
//	c, _ := net.ListenPacket("udp", "127.0.0.1:0")
//	lossy, err := faultnet.NewPacketConn(c, faultnet.Config{
//		Read: faultnet.Faults{Seed: 1, Loss: 0.01, Reorder: 0.001},
//	})
//
// [Filter] is an Injector for a receiver that reads its own sockets and
// names sources as netip.AddrPort values: it has the method set of
// multicast.DatagramFilter, so a multicast Subscriber rehearses loss
// with one (multicast.Config.Filter), without package multicast knowing
// about faultnet.
//
// [Conn] wraps a net.Conn (a TCP or unix stream): Delay makes written
// bytes arrive later, MaxChunk makes reads short to exercise framing,
// and CutAfter drops the connection abruptly after a number of bytes.
package faultnet
