package multicast

import "github.com/brokerless/brokerless/reliable"

// PublisherStats is a snapshot of a Publisher's counters.
type PublisherStats struct {
	reliable.SenderStats
	SendCalls uint64 // sendmmsg calls
	// InlineWrites: writes made by a Publish call itself (its caller
	// paced, see Config.InlineAfter) rather than by the send goroutine.
	InlineWrites uint64
	SendErrors   uint64 // datagrams the kernel refused
	SendBuffer   int    // SO_SNDBUF granted by the kernel, bytes
	// GSO: runs of equal-size datagrams leave as one UDP GSO entry
	// (Config.NoOffload unset, the kernel offers UDP_SEGMENT, and no GSO
	// send has failed).
	GSO        bool
	GSORuns    uint64 // batch entries that carried a run of datagrams (GSO)
	ReadErrors uint64 // errors reading NACKs
	InboxDrops uint64 // NACKs dropped: more arrived than sendLoop could take
}

// SubscriberStats is a snapshot of a Subscriber's counters.
type SubscriberStats struct {
	reliable.ReceiverStats
	RecvBuffer int    // SO_RCVBUF granted by the kernel, bytes
	GRO        bool   // the kernel hands runs of datagrams as one buffer (UDP_GRO)
	Reads      uint64 // recvmmsg calls on the group socket
	// OwnReads: of Reads, those made by the application's goroutine in
	// Receive (it reads itself when nobody else reads), not by the
	// reader goroutine.
	OwnReads     uint64
	GROReads     uint64 // entries read that held a run of datagrams (GRO)
	ReadErrors   uint64 // socket read errors
	NackErrors   uint64 // NACKs the kernel refused to send
	StatusErrors uint64 // STATUS datagrams (flow control) the kernel refused to send
	InboxDrops   uint64 // unicast datagrams dropped: more came than the reader took
	FilterDrops  uint64 // received datagrams Config.Filter did not keep
	QueueStalls  uint64 // times the reader had to wait for the application
	// Oversleeps counts the reads that returned long past their deadline
	// (the process was stopped): what waited in the socket was read
	// before the engine's timers ran.
	Oversleeps uint64
	// SpinReads counts the reads, not counted in Reads, made spinning
	// (Config.Spin) on an empty socket; SpinHits those of them that
	// found datagrams.
	SpinReads, SpinHits uint64
	// Archive counts what was taken from the archive (Config.Archive).
	Archive ArchiveStats
}
