package logd

import "github.com/twmb/franz-go/pkg/kmsg"

// groupElementCost is the cost of a JoinGroup's protocol or a
// SyncGroup's assignment, decoded and answered: its kmsg struct and its
// share of the answer (measured with TestDecodeChargeCovers' empty
// elements). Their metadata and assignments, bytes that decoding does
// not copy, are charged at their size: the coordinator keeps a copy
// (bounded over all groups by MaxGroupBytes). At 64 times its frame, a
// member subscribing to a few thousand topics (a 100 KiB JoinGroup) took
// 6.4 MiB while it waited for its group, more than a small budget holds.
const groupElementCost = 512

// scanJoinGroup walks a JoinGroup frame of a supported version (0 to 7;
// others are not decoded) and returns its decoding's and answer's cost.
// Of it, its protocols' metadata, counted at its size, is given back
// while the member waits for its group (conn.joinWaiting): the
// coordinator has copied the metadata by then, and holds it bounded
// over all groups by MaxGroupBytes; the frame's bytes, to which the
// decoded metadata still points, are request memory of the frames'
// budget. Kept charged, 2000 members of 100 KiB metadata waiting for
// their group filled the default budget, so no other request could be
// decoded meanwhile.
func scanJoinGroup(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.JoinGroup.Int16(), version) {
		return requestCost, true
	}
	sc := newScanner(frame, version >= 6)
	sc.str()     // group
	sc.r.Int32() // session timeout
	if version >= 1 {
		sc.r.Int32() // rebalance timeout
	}
	sc.str() // member id
	if version >= 5 {
		sc.str() // instance id
	}
	sc.str() // protocol type
	sc.groupElements()
	sc.tags()
	return sc.cost, sc.r.Ok()
}

// scanSyncGroup walks a SyncGroup frame of a supported version (0 to 5).
func scanSyncGroup(frame []byte, version int16) (int64, bool) {
	if !supports(kmsg.SyncGroup.Int16(), version) {
		return requestCost, true
	}
	sc := newScanner(frame, version >= 4)
	sc.str()     // group
	sc.r.Int32() // generation
	sc.str()     // member id
	if version >= 3 {
		sc.str() // instance id
	}
	if version >= 5 {
		sc.str() // protocol type
		sc.str() // protocol
	}
	sc.groupElements()
	sc.tags()
	return sc.cost, sc.r.Ok()
}

// groupElements skips an array of a name and bytes (JoinGroup's
// protocols, SyncGroup's assignments), counting each and its bytes.
func (sc *scanner) groupElements() {
	n := sc.array()
	for range max(n, 0) {
		if !sc.r.Ok() {
			break
		}
		sc.cost += groupElementCost
		sc.str()
		before := len(sc.r.Src)
		sc.bytes()
		sc.cost += int64(before - len(sc.r.Src))
		sc.tags()
	}
}
