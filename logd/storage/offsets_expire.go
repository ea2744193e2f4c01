package storage

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// Offsets expire as Kafka's do (offsets.retention.minutes, KIP-211): a
// group's offsets are deleted once the group has gone OffsetsRetention
// without a commit and without members. The clock starts at the later
// of its last commit and the last time it was found with members: for a
// consumer group, when it became Empty; for a standalone consumer that
// commits without joining, at its last commit. A group with members
// never expires. Unlike Kafka, a group's offsets expire together, not
// partition by partition: a standalone consumer that keeps committing
// some partitions keeps the others too.
//
// Which groups have members is known to the group coordinator, not to
// the store: SetActive gives the store a function listing them. Expire
// asks it at every pass and remembers the time (in memory) for each
// group listed. A group with members whose last commit record is older
// than an eighth of the retention gets a record with no offsets and the
// current time, so that after a restart, when the coordinator knows no
// members until they rejoin, such a group still has at least 7/8 of the
// retention to come back.

// touchDivisor: a group with members is recorded as such once its last
// commit record is older than retention / touchDivisor.
const touchDivisor = 8

// expireWriteBytes bounds the records one write of Expire carries.
const expireWriteBytes = 1 << 20

// SetActive gives the store the function that lists the groups having
// members now (logd passes its group coordinator's). It is called
// without the store's lock held, and must not call the store. Until it
// is set, no group has members: offsets expire retention after their
// last commit.
func (o *OffsetStore) SetActive(active func() []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.active = active
}

// expiresAt lowers nextExpiry to what a commit at ms allows. o.mu is
// held.
func (o *OffsetStore) expiresAt(ms int64) {
	if o.retention > 0 {
		o.nextExpiry = min(o.nextExpiry, ms+o.retention)
	}
}

// listActive calls the active function. o.mu is not held.
func (o *OffsetStore) listActive() []string {
	o.mu.Lock()
	f := o.active
	o.mu.Unlock()
	if f == nil {
		return nil
	}
	return f()
}

// Expire deletes, durably, the offsets of every group that has gone
// OffsetsRetention without a commit and without members, as of now, and
// returns how many groups it deleted. Each is logged and told to the
// HookGroupOffsetsExpire hooks. The Store's maintenance calls it every
// MaintenanceInterval; Commit calls it when a commit would pass
// MaxGroups or MaxOffsetBytes. It does nothing when OffsetsRetention
// is -1.
func (o *OffsetStore) Expire(now time.Time) (int, error) {
	if o.retention <= 0 {
		return 0, nil
	}
	active := o.listActive()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.expire(now.UnixMilli(), active)
}

// roomFor returns nil when group may commit offs: they fit the limits
// (see fits), or do once the groups past retention are expired. o.mu is
// held; it is released while the active groups are listed.
func (o *OffsetStore) roomFor(group string, offs []GroupOffset, now int64) error {
	for tried := false; ; tried = true {
		if o.closed {
			return ErrClosed
		}
		err := o.fits(group, offs)
		// nextExpiry makes a flood of commits into a full store cost one
		// scan per expiry due, not one per commit.
		if err == nil || tried || o.retention <= 0 || now < o.nextExpiry {
			return err
		}
		o.mu.Unlock()
		active := o.listActive()
		o.mu.Lock()
		if _, err := o.expire(now, active); err != nil {
			return err
		}
	}
}

// expire is Expire with the active groups listed. o.mu is held.
func (o *OffsetStore) expire(now int64, active []string) (int, error) {
	if o.closed {
		return 0, ErrClosed
	}
	var recs []byte
	for _, name := range active {
		g := o.groups[name]
		if g == nil {
			continue
		}
		g.seen = max(g.seen, now)
		if now-g.at < o.retention/touchDivisor {
			continue
		}
		if recs = encodeCommit(recs, name, now, nil); len(recs) >= expireWriteBytes {
			if err := o.writeRecords(recs); err != nil {
				return 0, err
			}
			recs = recs[:0]
		}
	}
	if len(recs) > 0 {
		if err := o.writeRecords(recs); err != nil {
			return 0, err
		}
	}
	if now < o.nextExpiry {
		return 0, nil
	}
	next := int64(math.MaxInt64)
	var expired []string
	for name, g := range o.groups {
		if at := max(g.at, g.seen) + o.retention; now < at {
			next = min(next, at)
		} else {
			expired = append(expired, name)
		}
	}
	slices.Sort(expired)
	n := 0
	for n < len(expired) {
		recs = recs[:0]
		var parts []int
		for n+len(parts) < len(expired) && len(recs) < expireWriteBytes {
			name := expired[n+len(parts)]
			recs = append(recs, encodeDelete(offRecDelGroup, name)...)
			parts = append(parts, len(o.groups[name].offs))
		}
		if err := o.writeRecords(recs); err != nil {
			return n, err
		}
		for i, p := range parts {
			o.hooks.groupOffsetsExpire(expired[n+i], p)
		}
		n += len(parts)
	}
	o.nextExpiry = next
	if n == 0 {
		return 0, nil
	}
	o.logger.Info("storage: consumer groups' offsets expired", "groups", n,
		"retention", time.Duration(o.retention)*time.Millisecond, "first", expired[0])
	return n, o.maybeRewrite()
}

// writeRecords appends records durably and applies them. o.mu is held.
func (o *OffsetStore) writeRecords(recs []byte) error {
	if err := o.write(recs); err != nil {
		return err
	}
	for p := recs; len(p) > 0; {
		n := offRecHeaderLen + int(binary.BigEndian.Uint32(p))
		if err := o.apply(p[offRecHeaderLen:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}
