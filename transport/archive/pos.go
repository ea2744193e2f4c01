package archive

import "fmt"

// Pos is a position in a direct feed: a publisher session and a
// sequence number in it. Positions order as the feed's records do in its
// archive: by session (session numbers grow with their start time), then
// by sequence number.
type Pos struct {
	Session, Seq uint64
}

// Less reports whether p comes before q.
func (p Pos) Less(q Pos) bool {
	if p.Session != q.Session {
		return p.Session < q.Session
	}
	return p.Seq < q.Seq
}

func (p Pos) String() string { return fmt.Sprintf("%016x:%d", p.Session, p.Seq) }
