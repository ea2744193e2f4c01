package store

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// checkpointEvery is how many commits on the main connection prompt a
// checkpoint; checkpointPeriod is the longest a commit waits for one.
const (
	checkpointEvery  = 128
	checkpointPeriod = time.Second
)

// checkpointer copies SQLite's write-ahead log into the database file
// from a connection of its own, in the background (PASSIVE checkpoints,
// which run beside the writer). The main connection's automatic
// checkpoint is off: it runs inside the commit that crosses 1,000 pages
// of log, and its two fsyncs stalled that commit and every claim and
// completion queued behind it on the one connection. Commits keep their
// own durability (synchronous=FULL fsyncs the log at each event's
// commit); a checkpoint only moves what is already durable.
type checkpointer struct {
	db      *sql.DB
	commits atomic.Int64
	nudge   chan struct{}
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
}

func newCheckpointer(db *sql.DB) *checkpointer {
	c := &checkpointer{db: db, nudge: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// committed counts a commit on the main connection.
func (c *checkpointer) committed() {
	if c.commits.Add(1)%checkpointEvery == 0 {
		select {
		case c.nudge <- struct{}{}:
		default:
		}
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(checkpointPeriod)
	defer tick.Stop()
	last := int64(0)
	for {
		select {
		case <-c.stop:
			return
		case <-c.nudge:
		case <-tick.C:
		}
		if n := c.commits.Load(); n != last {
			// An error (the log busy) leaves the work to the next round.
			if _, err := c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err == nil {
				last = n
			}
		}
	}
}

// close stops the checkpointer and closes its connection (the main
// connection's close checkpoints what is left).
func (c *checkpointer) close() error {
	var err error
	c.closing.Do(func() {
		close(c.stop)
		<-c.done
		err = c.db.Close()
	})
	return err
}
