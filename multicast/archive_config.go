package multicast

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// Defaults of ArchiveConfig.
const (
	DefaultArchiveBuffer      = 1 << 18
	DefaultArchiveBufferBytes = 64 << 20
	DefaultArchiveWait        = 3 * time.Second
)

// ArchiveConfig names a subscriber's archive: the log a recorder writes
// the feed to (`brokerless mcast record`, or `brokerless pipe mcast://…
// logd://…`), which the subscriber reads for what the publisher cannot
// give. See the package documentation, "Archive".
type ArchiveConfig struct {
	// URL is the log: logd://HOST:PORT/TOPIC, or kafka://…, with
	// partition=N when the topic has several partitions and the feed's
	// cannot be told from its last records. Its scheme must be
	// registered (import transport/kafka). Empty: no archive. One
	// recorder should write it: with two writing one topic, a gap
	// marker of one is a Gap even where the other's copies follow (see
	// the package documentation, "Archive").
	URL string
	// Open, when set, opens the log instead of URL (tests).
	Open func(ctx context.Context) (transport.Log, error)
	// Join says where the subscriber starts: at the live edge (the
	// default), or with history from the archive (earliest, a sequence
	// number of the feed's current session, a time), which it merges
	// into the live feed with no gap and no duplicate.
	Join Join
	// Buffer and BufferBytes bound the live events held while the
	// archive is read: BufferBytes counts the memory they take, their
	// copies and the slots of the queue that holds them (a
	// transport.Event each, 336 bytes on 64-bit platforms), which is let
	// go when the replay is over. When they are full the oldest are
	// dropped, to be read from the archive too (counted:
	// ArchiveStats.LiveDropped), and the switch to live waits until the
	// archive catches up. Defaults 262144 and 64 MiB (about 130,000
	// messages of 64 bytes). Besides them the replay holds at most five
	// reads of the archive (four in flight, one being merged), each
	// at most one fetch of the log: with logd:// or kafka://, 1 MiB
	// (kafka.DefaultLogFetchBytes) but for a larger record batch.
	Buffer, BufferBytes int
	// Wait is how long the archive may give nothing more of the feed,
	// when the subscriber needs it, before what it lacks is reported as
	// a Gap (transport.GapNotArchived). It covers a recorder's lag
	// behind the live feed. It is also how long a late joiner's replay,
	// come to the next session in the archive before the live feed
	// showed anything, waits for the live feed to say where the current
	// session ended, unless the archive said it (the end marker of a
	// session its publisher closed); when it says nothing, the session's tail is
	// reported in an open Gap (transport.Gap.Open; see the package
	// documentation, "Archive"). Default 3 s.
	Wait time.Duration
}

// enabled reports whether an archive is configured.
func (c *ArchiveConfig) enabled() bool { return c.URL != "" || c.Open != nil }

func (c *ArchiveConfig) setDefaults() {
	setDefault(&c.Buffer, DefaultArchiveBuffer)
	setDefault(&c.BufferBytes, DefaultArchiveBufferBytes)
	setDefault(&c.Wait, DefaultArchiveWait)
}

func (c *ArchiveConfig) validate() error {
	switch {
	case c.Join.kind != joinLive && !c.enabled():
		return badConfig("Archive.Join", c.Join, "needs an archive (Archive.URL): without one a subscriber can only start live, or with Receiver.Join at what the publisher's window holds")
	case c.Join.kind == joinSeq && c.Join.seq == 0:
		// Sequence numbers start at 1; a zero N would read as no N, and
		// replay the whole archive.
		return badConfig("Archive.Join", c.Join, "seq:N needs N ≥ 1")
	case c.Buffer < 1:
		return badConfig("Archive.Buffer", c.Buffer, "must be ≥ 1")
	case c.BufferBytes < 1:
		return badConfig("Archive.BufferBytes", c.BufferBytes, "must be ≥ 1")
	case c.Wait <= 0:
		return badConfig("Archive.Wait", c.Wait, "must be > 0")
	}
	return nil
}

// Join is where a subscriber with an archive starts. The zero Join is
// JoinLive.
type Join struct {
	kind joinKind
	seq  uint64
	time time.Time
}

type joinKind uint8

const (
	joinLive joinKind = iota
	joinEarliest
	joinSeq
	joinTime
)

// JoinLive starts at the live edge: the next message published.
func JoinLive() Join { return Join{} }

// JoinEarliest starts with the oldest message the archive holds.
func JoinEarliest() Join { return Join{kind: joinEarliest} }

// JoinSeq starts at sequence number n of the feed's current session:
// the session of the archive's last record (when the archive holds none
// of the feed, the first session the live feed shows). Nothing before n
// is delivered, from the archive or live: with n past the live edge the
// subscriber delivers nothing until the feed reaches n, and starts there.
// The session's StreamStart says which session it replaced when the live
// feed said so before the session started, as under JoinLive.
// n must be at least 1 (a Config with JoinSeq(0) is refused).
func JoinSeq(n uint64) Join { return Join{kind: joinSeq, seq: n} }

// JoinTime starts with the first message published at or after t that
// the archive holds (the log's lookup by time). A t past the archive's
// last record starts at the archive's end, as a Kafka consumer's lookup
// by a time past a log's end does: what the recorder appends from then
// on, and the live feed, are delivered, whatever their publish time.
// When the live feed's first session, started at or after t, replaced
// the session of the archive's last record, which is no end marker,
// what that session published after it is in an open Gap
// (transport.Gap.Open) before its StreamEnd.
//
// What the archive lacks of the history is a Gap, as under JoinSeq,
// from where t falls in the session. When the archive does not say
// where (it holds nothing of the session at or after t, or cannot be
// read, or its retention deleted the records where t fell, or it holds
// no record of the session before its first at or after t: the
// recorder joined the session late), the Gap starts at the session's
// first position if its publisher started at or after t (the session
// number carries its start time); there is none if the first message
// the subscriber has of it was published before t; else where t falls
// is unknown, and the Gap, before that first message, says so
// (transport.GapStartUnknown, Len 0): it does not claim that messages
// published before t were lost.
func JoinTime(t time.Time) Join { return Join{kind: joinTime, time: t} }

// History reports whether the join starts before the live edge.
func (j Join) History() bool { return j.kind != joinLive }

func (j Join) String() string {
	switch j.kind {
	case joinEarliest:
		return "earliest"
	case joinSeq:
		return "seq:" + strconv.FormatUint(j.seq, 10)
	case joinTime:
		return "time:" + j.time.Format(time.RFC3339Nano)
	}
	return "live"
}

// ParseJoin reads what Join.String writes: live, earliest, seq:N (N ≥
// 1) or time:T (T in RFC 3339).
func ParseJoin(s string) (Join, error) {
	switch {
	case s == "live":
		return JoinLive(), nil
	case s == "earliest":
		return JoinEarliest(), nil
	case strings.HasPrefix(s, "seq:"):
		n, err := strconv.ParseUint(s[len("seq:"):], 10, 64)
		if err != nil || n == 0 {
			return Join{}, fmt.Errorf("join %q: want seq:N, N a sequence number from 1", s)
		}
		return JoinSeq(n), nil
	case strings.HasPrefix(s, "time:"):
		t, err := time.Parse(time.RFC3339Nano, s[len("time:"):])
		if err != nil {
			return Join{}, fmt.Errorf("join %q: want time:T, T in RFC 3339, e.g. time:2025-01-02T15:04:05Z", s)
		}
		return JoinTime(t), nil
	}
	return Join{}, fmt.Errorf("join %q: want live, earliest, seq:N or time:T", s)
}
