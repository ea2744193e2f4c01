// Package transporttest holds what the transport conformance suite
// checks recorded event logs with, exported so a transport's own tests
// can reuse them over events they recorded themselves (copied: received
// slices are only valid until the next Receive).
//
// [Payload] makes the payload of message i, which [PayloadIndex] reads
// back, detecting any corruption, truncation or mix-up. The checkers read
// each message's index from its payload and return a [*Violation] naming
// the first offending event:
//   - [CheckOrdered]: per stream, sequence numbers increase strictly;
//   - [CheckAccounting]: per stream, messages and gaps are disjoint and
//     increasing, stream starts and ends are consistent, and (with
//     contiguous sequence numbers) nothing is lost silently;
//   - [CheckExactlyOnce], [CheckDelivered], [CheckAtMostOnce]: what
//     Retransmit and Deduplicated promise;
//   - [CheckLossReported]: what GapReports promises, whatever the number
//     of sequence numbers a message uses.
package transporttest
