package reliable

import (
	"net/netip"
	"time"
)

// A NACK costs the publisher little to read but can ask for a whole
// retransmit window, multicast to every subscriber: forged NACKs
// (100,000 of them, 3.4 MB, caused 570 MB of repairs before this
// existed) would turn the publisher into an amplifier. So each source
// address that sends NACKs has a budget:
//
//   - NACKs: SourceNackRate per second, in bursts of SourceNackBurst;
//     a NACK over it is dropped whole (NacksOverBudget), with no NCF,
//     LOST notice or repair.
//   - Repair bytes: a source may cause SourceRepairShare bytes of repair
//     per byte of new data the publisher sends, plus SourceRepairRate
//     bytes per second. It may save up, and a new source starts with,
//     the share of what the retransmit window holds (at least
//     newSourceRepair): nobody can need more at once, since what left
//     the window is gone, and a subscriber may have lost all of it before
//     it could NACK (a socket buffer overflowing on a fast feed loses
//     thousands of datagrams at once, then the feed may stop). A
//     subscriber cannot lose more than was sent, and rarely its repairs
//     too, so an honest one stays within a share of 2 (20% loss at full
//     speed, with the repairs of repairs asked while the first ones were
//     on their way, needed 0.7; one that cannot keep up with a feed sent
//     as fast as the machine allows, and loses whole socket buffers and
//     their repairs, needed more than 1), while a forger can add at most
//     twice the feed's own bandwidth, plus what it saved up (twice the
//     window) and a trickle. A repair over it is not queued
//     (RepairsOverBudget) and its range is left out of the NCF, so the
//     subscriber backs off before asking again.
//
// Multicast repairs charge the source whose NACK caused them; a NACK
// for a datagram already queued or just repaired costs nothing more.
// The table of sources is bounded (MaxNackSources): a new source
// replaces the one idle longest if that one has been idle for
// sourceIdle, otherwise it shares one overflow budget with every other
// source that found the table full (NackSourcesFull). A forger who
// changes port for each NACK thus gets up to MaxNackSources budgets, and
// the global RepairRate; against that, a shared key is the defence.

// sourceIdle is how long a source must have been quiet before a new one
// may take its place in a full table.
const sourceIdle = 10 * time.Second

// newSourceRepair is the least repair bytes a source may save up.
const newSourceRepair = 256 << 10

// nackSource is one source's budget.
type nackSource struct {
	addr   netip.AddrPort
	nacks  tokenBucket
	repair float64   // repair bytes it may still cause
	sent   uint64    // the sender's new-data bytes when repair was last refilled
	at     time.Time // when repair was last refilled
	last   time.Time // its last NACK

	// Unicast repairs (antiAmplification): bytes of NACKs taken from
	// it, bytes of repairs sent to it, and whether a key vouched for
	// it.
	got, unicast uint64
	keyed        bool
}

// antiAmplification bounds the unicast repair bytes an address no key
// vouches for may be sent, per byte of NACK it sent: QUIC's limit for
// an address it has not validated (RFC 9000, section 8). A NACK's
// source address is not checked by anything: with UnicastRepairs, a
// forged NACK naming a victim's address would otherwise have the
// publisher send the victim a window's worth of repairs (one 34-byte
// NACK: 1.4 MB). Past the limit the repairs go to the group, which the
// subscriber that asked reads anyway (RepairsToGroup). Without a key no
// datagram proves where it came from (a STATUS is as easily forged as a
// NACK), so only a key lifts the limit.
const antiAmplification = 3

// mayUnicast reports whether a repair of n bytes may be sent to addr,
// charging it if so.
func (b *budgets) mayUnicast(addr netip.AddrPort, n int) bool {
	i, ok := b.index[addr]
	if !ok {
		return false // its budget is gone or shared: nothing vouches for it
	}
	src := &b.srcs[i]
	if !src.keyed && src.unicast+uint64(n) > antiAmplification*src.got {
		return false
	}
	src.unicast += uint64(n)
	return true
}

// budgets is the bounded table of sources.
type budgets struct {
	cfg      *SenderConfig
	index    map[netip.AddrPort]int
	srcs     []nackSource
	overflow nackSource
}

func newBudgets(cfg *SenderConfig, now time.Time) budgets {
	b := budgets{cfg: cfg, index: make(map[netip.AddrPort]int)}
	b.overflow = b.fresh(netip.AddrPort{}, now, 0, 0)
	return b
}

// fresh is the budget of a new source, when the sender has sent sent
// bytes of new data and its window holds held bytes.
func (b *budgets) fresh(addr netip.AddrPort, now time.Time, sent uint64, held int) nackSource {
	c := b.cfg
	return nackSource{
		addr:   addr,
		nacks:  newTokenBucket(int64(c.SourceNackRate), c.SourceNackBurst, now),
		repair: b.saving(held),
		sent:   sent,
		at:     now,
	}
}

// source returns the budget of addr, making room for it if needed;
// full reports that it is the shared overflow budget. sent and held are
// as for fresh.
func (b *budgets) source(addr netip.AddrPort, now time.Time, sent uint64, held int) (src *nackSource, full bool) {
	if i, ok := b.index[addr]; ok {
		return &b.srcs[i], false
	}
	if len(b.srcs) < b.cfg.MaxNackSources {
		b.index[addr] = len(b.srcs)
		b.srcs = append(b.srcs, b.fresh(addr, now, sent, held))
		return &b.srcs[len(b.srcs)-1], false
	}
	oldest := 0
	for i := range b.srcs {
		if b.srcs[i].last.Before(b.srcs[oldest].last) {
			oldest = i
		}
	}
	if now.Sub(b.srcs[oldest].last) < sourceIdle {
		return &b.overflow, true
	}
	delete(b.index, b.srcs[oldest].addr)
	b.index[addr] = oldest
	b.srcs[oldest] = b.fresh(addr, now, sent, held)
	return &b.srcs[oldest], false
}

// saving is the most repair bytes a source may save up while the window
// holds held bytes.
func (b *budgets) saving(held int) float64 {
	return max(newSourceRepair, b.cfg.SourceRepairShare*float64(held))
}

// takeRepair spends n repair bytes of src if it has them; sent is the
// sender's new-data bytes so far, held the bytes its window holds.
func (b *budgets) takeRepair(src *nackSource, now time.Time, sent uint64, held, n int) bool {
	c := b.cfg
	if now.After(src.at) {
		src.repair += now.Sub(src.at).Seconds() * float64(c.SourceRepairRate)
		src.at = now
	}
	src.repair += float64(sent-src.sent) * c.SourceRepairShare
	src.sent = sent
	src.repair = min(src.repair, b.saving(held))
	if src.repair < float64(n) {
		return false
	}
	src.repair -= float64(n)
	return true
}
