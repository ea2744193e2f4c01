// Package transporttest is the conformance suite every brokerless
// transport runs: one [Run] call from the transport's own _test.go file
// checks the contract of package transport and each [transport.Semantics]
// flag the transport claims.
//
// A transport wires the suite up with a [Harness] whose NewPair makes a
// connected publisher and subscriber on a fresh address, injecting the
// [Faults] asked for or returning [ErrFaultsUnsupported]. The multicast
// transport's (multicast/conformance_test.go) injects the faults on the
// subscriber's receive path:
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, transporttest.Harness{
//			NewPair: func(t *testing.T, f transporttest.Faults) (transporttest.Pair, error) {
//				cfg := testConfig(t) // a fresh group on lo, TTL 0
//				scfg := cfg
//				faults := faultnet.Faults{Loss: f.Loss, Duplicate: f.Duplicate, Reorder: f.Reorder, Seed: f.Seed}
//				scfg.Filter = func() (multicast.DatagramFilter, error) { return faultnet.NewFilter(faults) }
//				sub, err := multicast.NewSubscriber(ctx, scfg)
//				if err != nil {
//					return transporttest.Pair{}, err
//				}
//				newPub := func() (transport.Publisher, error) { return multicast.NewPublisher(ctx, cfg) }
//				pub, err := newPub()
//				if err != nil {
//					sub.Close()
//					return transporttest.Pair{}, err
//				}
//				return transporttest.Pair{Pub: pub, Sub: sub, NewPublisher: newPub}, nil
//			},
//			MaxPayload: 1 << 20,
//			// ContiguousSeq stays false: a message larger than a datagram
//			// uses several sequence numbers.
//		})
//	}
//
// A transport that cannot inject faults (ZeroMQ over TCP, say) returns
// an error wrapping ErrFaultsUnsupported when !f.IsZero(); a Kafka-protocol
// transport sets TimeResolution to time.Millisecond.
//
// A transport that claims Durable, Replay or AtLeastOnce also sets the
// Pair's hooks those checks need: RestartServer (crash the server that
// stores the messages and start it again), NewSubscriber (read from a
// position) and NewGroupMember (take over from Sub). A claim whose hook
// is nil fails: no claim passes unchecked. A log (Kafka, logd) may leave
// NewPublisher nil, skipping Restart: its stream is a partition, which a
// publisher restart does not change (given a NewPublisher, Restart
// checks that the new publisher continues the stream).
//
// The subscriber must be ready to receive messages of topic [Topic] when
// NewPair returns. The suite closes every publisher and subscriber it is
// given; anything else (a daemon, a directory) the harness releases with
// t.Cleanup. Tests whose faults the harness cannot inject are skipped. A
// harness can call Run more than once, for example over IPv4 and IPv6,
// or with Messages lowered under -race.
//
// Run's subtests, each on a fresh pair:
//   - Semantics: publisher and subscriber claim the same flags, at least
//     Ordered|GapReports, and the subscriber implements
//     transport.Acknowledger if and only if it claims AtLeastOnce.
//   - Ordering: Messages messages with every field set, on a clean
//     network: one stream, in order, fields intact (Time to the
//     nanosecond or within TimeResolution), and exactly once with no gap
//     if Retransmit|Deduplicated.
//   - Accounting: the same under loss, duplication and reordering (clean
//     if unsupported): messages, gaps and stream events add up.
//   - Loss (Retransmit): under 1% and 10% loss every message arrives,
//     exactly once if Deduplicated, in order, with no gap.
//   - GapReports (GapReports without Retransmit): under 20% loss every
//     lost message is covered by a gap.
//   - LargeMessage: payloads of MaxPayload and MaxPayload/3+7 bytes
//     arrive intact.
//   - ConcurrentPublish: goroutines sharing one Publisher make one
//     consistent stream, each goroutine's messages in its order.
//   - Restart (needs Pair.NewPublisher): a restarted publisher is a new
//     session of the same feed, never mixed with the old one, and its
//     stream-start names the old session in Replaces; on a log (streams
//     named by topic and partition, which have no sessions) it continues
//     the same stream.
//   - Durable (the claim needs Pair.RestartServer and NewSubscriber):
//     messages acknowledged (Flush returned) before RestartServer
//     crashed the transport's server are all still there after it:
//     the subscriber carries on, the publisher publishes more, and a
//     new subscriber from the first position reads every message back
//     in order at the positions it was first delivered at.
//   - Replay (the claim needs Pair.NewSubscriber): a new subscriber from
//     the position of a message in the middle, and from that of the
//     last, delivers that message and every later one, in order, at
//     the positions they were first delivered at.
//   - AtLeastOnce (the claim needs Pair.NewGroupMember): the subscriber
//     acknowledges half the messages it received and is closed; the
//     member that takes over delivers every unacknowledged message, in
//     order, at the same positions, and none acknowledged.
//   - DefaultTime: a zero Time is replaced by the publish time.
//   - CloseUnblocksReceive, ClosePublisher: Close unblocks a pending
//     Receive with ErrClosed; calls after Close return ErrClosed; a second
//     Close neither blocks nor panics.
//   - ContextCancel: Receive honours a cancelled context at once and
//     while waiting, Publish with one does not block, and the subscriber
//     still delivers afterwards.
//   - NoGoroutineLeak: closing a pair ends every goroutine it started.
//     Run therefore must not run in parallel with other tests.
//
// Every recorded log also goes through the checkers, which are exported
// for a transport's own tests over events it recorded itself (copied:
// received slices are only valid until the next Receive):
// [CheckOrdered], [CheckAccounting], [CheckExactlyOnce], [CheckDelivered],
// [CheckAtMostOnce], [CheckLossReported], [CheckReplayed],
// [CheckPositions] and [CheckRedelivered]. They read a message's index
// from its payload, made by [Payload], and return a [*Violation] naming
// the first offending event.
//
// The suite waits on events, never on sleeps: every receive has a
// deadline, so a broken transport fails instead of hanging, and a run
// whose last message was lost ends once nothing arrives for Harness.Idle
// (at least 15 s for a subscriber that may have to reconnect to a
// restarted server or join a consumer group first).
package transporttest
