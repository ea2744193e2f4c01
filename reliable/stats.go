package reliable

// SenderStats counts what a Sender did. Every field only grows.
type SenderStats struct {
	Messages      uint64 // messages published
	Frames        uint64 // frames (a fragmented message has several)
	Datagrams     uint64 // original DATA datagrams handed out
	Bytes         uint64 // bytes of those datagrams
	Heartbeats    uint64 // HEARTBEAT datagrams
	UnsentAtClose uint64 // sequence numbers published but never sent: flow control still held them when Close's END went (the END names them, so receivers report them lost)
	Backpressure  uint64 // Publish calls refused with ErrBackpressure
	NacksReceived uint64 // NACK datagrams accepted
	NackRanges    uint64 // ranges in them
	NacksIgnored  uint64 // NACK ranges naming sequences never sent
	Ncfs          uint64 // NCF datagrams sent
	LostNotices   uint64 // LOST datagrams sent (NACKs outside the window)
	Repairs       uint64 // repair datagrams sent
	RepairBytes   uint64
	RepairsLinger uint64 // repairs skipped: the same datagram was repaired within RepairLinger
	RepairsQueue  uint64 // repairs dropped: the repair queue was full
	RepairsGone   uint64 // repairs dropped: the datagram left the window before its turn
	ControlDrops  uint64 // NCF/LOST datagrams dropped: the control queue was full
	// NacksOverBudget counts NACKs dropped whole because their source
	// sent more than its NACK budget; RepairsOverBudget, repairs not
	// sent because their source had caused more than its repair budget;
	// NackSourcesFull, NACKs charged to the shared overflow budget
	// because the table of sources was full (budget.go);
	// RepairsToGroup, repairs that UnicastRepairs would have sent to the
	// receiver that asked, sent to the group instead: no key vouched for
	// its address, and it had been sent three times the bytes it sent
	// (budget.go, antiAmplification).
	NacksOverBudget   uint64
	RepairsOverBudget uint64
	NackSourcesFull   uint64
	RepairsToGroup    uint64
	// StatusReceived counts STATUS datagrams accepted; FlowHeld, Publish
	// calls refused with ErrFlowControl; FlowReceivers, receivers that
	// flow control started waiting for; FlowTimeouts, receivers it
	// stopped waiting for after ReceiverTimeout of silence;
	// FlowReceiversFull, STATUS from new receivers dropped because
	// MaxReceivers were tracked; FlowBehind, STATUS that named a
	// position the retransmit window no longer holds: ignored without
	// a key (a forged one must not hold the publisher), taken as the
	// window's low edge with one; ReceiversLeft, receivers it stopped waiting for at
	// once because their leaving STATUS said they closed;
	// StatusAfterLeave, STATUS ignored because its receiver had left
	// since it was sent (UDP delivered it after the leaving STATUS: it
	// names no position past the publisher's when that came), which
	// would have had the publisher wait for a receiver that is gone;
	// LeftEvicted, receivers that left forgotten before ReceiverTimeout
	// because Flow.MaxReceivers others left after them (flow.go).
	StatusReceived    uint64
	FlowHeld          uint64
	FlowReceivers     uint64
	FlowTimeouts      uint64
	FlowReceiversFull uint64
	FlowBehind        uint64
	ReceiversLeft     uint64
	StatusAfterLeave  uint64
	LeftEvicted       uint64
	Malformed         uint64 // control datagrams that failed to decode
	Foreign           uint64 // datagrams that are not ours, or for another stream
	// Unauthenticated counts datagrams dropped, with a key, for want of
	// a valid tag: missing, wrong, or from a new sender while too many
	// new senders came at once.
	Unauthenticated uint64
	// Replayed counts control datagrams dropped, with a key, because a
	// datagram with their authentication counter was already taken
	// from the same receiver: a replay (a STATUS replayed would keep
	// a gone receiver waited for).
	Replayed uint64
}

// ReceiverStats counts what a Receiver did. Every field only grows.
type ReceiverStats struct {
	Datagrams        uint64 // datagrams accepted
	Frames           uint64 // DATA frames accepted (new or duplicate)
	Delivered        uint64 // messages delivered
	Recovered        uint64 // frames (messages, or fragments of larger ones) that arrived after their loss was noticed: by repair, or late
	Duplicates       uint64 // frames already delivered or buffered, dropped
	Heartbeats       uint64 // HEARTBEAT datagrams
	NacksSent        uint64 // NACK datagrams sent
	StatusSent       uint64 // STATUS datagrams sent (flow control)
	NackRanges       uint64 // ranges in them
	Suppressed       uint64 // first NACKs of a loss not sent because an NCF for it came first
	NcfsSeen         uint64 // NCF datagrams received
	LostSeen         uint64 // LOST datagrams received
	Gaps             uint64 // Gap events delivered
	GapSeqs          uint64 // sequence numbers covered by them
	Overflow         uint64 // losses given up because the reorder buffer was full
	Streams          uint64 // streams started
	Restarts         uint64 // streams replaced by a new session of their feed
	StreamDrops      uint64 // datagrams of new feeds refused: MaxStreams reached
	Stale            uint64 // datagrams of a replaced or ended session
	Resumed          uint64 // streams ended for silence (IdleTimeout) started again by new data of their session from their source: the publisher outlived an outage
	WrongSource      uint64 // datagrams of a session from another address than its source (the one that started it); with a key, only NCF and LOST are checked, against the last address to send new sequence numbers
	Jumps            uint64 // datagrams dropped: more than MaxJump past the highest sequence seen, unconfirmed
	JumpsConfirmed   uint64 // jumps past MaxJump believed: the publisher fell silent, then reappeared further on
	EndsRejected     uint64 // END datagrams not believed: contradicted by later data, or inconsistent
	RestartsHeld     uint64 // datagrams of a new session held while the feed's current stream was alive, handed to it once believed (successor.go)
	RestartsDeferred uint64 // datagrams of a new session dropped while the feed's current stream was alive: beyond HoldBytes, or of a session another one displaced; recovered by NACK
	Filtered         uint64 // datagrams of feeds not in ReceiverConfig.Feeds
	Malformed        uint64 // datagrams that failed to decode
	Foreign          uint64 // datagrams that are not ours
	TooLarge         uint64 // messages dropped because they exceed MaxMessageSize
	// RepairsBeforeStart counts repairs dropped because they came
	// before a stream's first live datagram (DATA or heartbeat), which
	// places it: a repair multicast for other receivers is of an old
	// position, and would have started a JoinLive stream there.
	RepairsBeforeStart uint64
	// Unauthenticated counts datagrams dropped, with a key, for want of
	// a valid tag: missing, wrong, or from a new sender while too many
	// new senders came at once.
	Unauthenticated uint64
	// MalformedMessages counts fragmented messages dropped, reported
	// as GapMalformed, because their fragments carry more or fewer
	// bytes than their first one announced.
	MalformedMessages uint64
}
