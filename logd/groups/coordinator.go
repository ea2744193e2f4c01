package groups

import (
	"log/slog"
	"sync"
	"time"
)

// Coordinator runs the consumer groups of one logd. It is safe for
// concurrent use; one lock guards every group, and no call holds it
// while waiting or while the OffsetStore works. A per-group lock
// (commitlock.go) orders each group's OffsetCommits.
type Coordinator struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	groups map[string]*group
	stats  Stats
	// retained counts the bytes of groups' names, protocol types and
	// chosen protocols, of members' protocols, assignments and IDs, and
	// of member IDs handed out, held (retained.go).
	retained int64
	// commitLocks holds the commit lock of each group with a commit in
	// flight (commitlock.go).
	commitLocks map[string]*commitLock
}

// New returns a Coordinator, or an error wrapping ErrBadConfig.
func New(cfg Config) (*Coordinator, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Coordinator{cfg: cfg, log: cfg.Logger, groups: make(map[string]*group), commitLocks: make(map[string]*commitLock)}, nil
}

// Stats returns a snapshot of the counters.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// addGroup makes a new Empty group, evicting the group that has been
// Empty longest when MaxGroups are held; it fails when none can go.
func (c *Coordinator) addGroup(name string, now time.Time) (*group, bool) {
	if len(c.groups) >= c.cfg.MaxGroups {
		var victim *group
		for _, g := range c.groups {
			if g.state == StateEmpty && len(g.pending) == 0 && (victim == nil || g.emptySince.Before(victim.emptySince)) {
				victim = g
			}
		}
		if victim == nil {
			c.stats.GroupsRejected++
			c.log.Warn("group refused: too many groups", "group", name, "max", c.cfg.MaxGroups)
			return nil, false
		}
		delete(c.groups, victim.name)
		c.retained -= victim.bytes()
		c.stats.GroupsEvicted++
		c.log.Info("empty group evicted from memory", "group", victim.name, "for", name)
	}
	g := newGroup(name, now)
	c.groups[name] = g
	c.retained += g.bytes()
	return g, true
}

// full says whether the group may take no more members.
func (c *Coordinator) full(g *group) bool {
	if len(g.members)+len(g.pending) < c.cfg.MaxMembers {
		return false
	}
	c.stats.MembersRejected++
	c.log.Warn("join refused: group full", "group", g.name, "max", c.cfg.MaxMembers)
	return true
}
