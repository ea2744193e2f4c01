package faultnet

// Stats counts what an [Injector] did. Every datagram offered is counted
// exactly once, in Passed, Dropped or Overflow; Delayed and Reordered
// count how many of the Passed were held, and Duplicated the extra copies
// made.
type Stats struct {
	// Passed counts datagrams kept for delivery (not their duplicates).
	Passed uint64
	// Dropped counts datagrams lost on purpose, by Loss or Drop.
	Dropped uint64
	// Duplicated counts extra copies queued for delivery. A copy is made
	// only if it fits within MaxHeld and MaxHeldBytes.
	Duplicated uint64
	// Reordered counts passed datagrams held back by ReorderDelay.
	Reordered uint64
	// Delayed counts passed datagrams given a non-zero Delay plus jitter.
	Delayed uint64
	// Overflow counts datagrams discarded because MaxHeld datagrams or
	// MaxHeldBytes bytes were already waiting.
	Overflow uint64
}
