package groups

import (
	"bytes"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// protocol is one assignment protocol a member supports, with the
// metadata it sent for it.
type protocol struct {
	name     string
	metadata []byte
}

// member is one member of a group. Its strings and bytes are copies: the
// request it came from may be decoded in place and its buffer reused.
type member struct {
	id         string
	instanceID string // "" for a dynamic member
	clientID   string
	clientHost string
	protocols  []protocol
	session    time.Duration
	rebalance  time.Duration
	lastSeen   time.Time // last join, sync, heartbeat or commit
	assignment []byte    // from the leader's SyncGroup; nil until then
	join       *joinWaiter
	sync       *syncWaiter
	seq        uint64 // join order in the group: leader choice and listings follow it
}

// sameProtocols says whether a join repeats the member's protocols and
// their metadata exactly, in the same order.
func (m *member) sameProtocols(protocols []protocol) bool {
	if len(m.protocols) != len(protocols) {
		return false
	}
	for i, p := range m.protocols {
		if p.name != protocols[i].name || !bytes.Equal(p.metadata, protocols[i].metadata) {
			return false
		}
	}
	return true
}

// metadataFor returns the member's metadata for protocol name.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// instancePtr is the instance ID as the protocol carries it: nil for a
// dynamic member.
func (m *member) instancePtr() *string {
	if m.instanceID == "" {
		return nil
	}
	return kmsg.StringPtr(m.instanceID)
}

// newMemberID makes a member ID the way Kafka does: the client ID (or
// the instance ID of a static member), "-", and a random UUID;
// memberIDLen(prefix) bytes.
func (c *Coordinator) newMemberID(prefix string) string {
	a, b := c.cfg.Rand.Uint64(), c.cfg.Rand.Uint64()
	return fmt.Sprintf("%s-%08x-%04x-%04x-%04x-%012x", prefix,
		uint32(a>>32), uint16(a>>16), uint16(a)&0x0fff|0x4000,
		uint16(b>>48)&0x3fff|0x8000, b&0xffffffffffff)
}

// memberIDLen is the length of the member IDs newMemberID makes from
// prefix: the prefix, "-" and a 36-character UUID.
func memberIDLen(prefix string) int { return len(prefix) + 1 + 36 }
