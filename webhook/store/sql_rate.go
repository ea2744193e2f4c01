package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// rateSlots is the generic cell rate algorithm of a rate limit of rate
// a second, one second's worth of slots saved up, in nanoseconds: tat
// is the theoretical arrival time the endpoint's row holds (0: none
// yet), now the clock. Of n slots wanted it takes as many as keep the
// new tat within tolerance of now, and returns them, the new tat and,
// when it took fewer than n, when the next one frees. A slot is
// 1/rate s rounded up, and the tolerance rate slots (a second, give or
// take rate nanoseconds): at most rate at once, and rate a second after.
// A tat beyond the tolerance is a clock ahead of now's having taken
// slots (another dispatcher's on SQLite; on PostgreSQL a transaction
// that began after this one and locked the row before it), or the clock
// stepped back since: it counts as the tolerance (the burst just used),
// and none is taken. It is written back to the tolerance (no more than
// the rate by the clock as it is now) only when beyond it by more than
// the tolerance, which no clock within a second of now's leaves: the
// clock stepped back more than a second, and the endpoint waits a slot,
// not for the clock to come back (kept, it gave none at each take until
// then). Within that it is left: written back, the clock ahead found
// the slots it had used free again, as many more than the rate as the
// clocks differ by, at each take of the one behind. (A clock stepped
// back a second or less is waited for, as it was.)
func rateSlots(tat, now int64, rate, n int) (took int, newTAT, next int64) {
	slot := int64(RateSlot(rate))
	tolerance := int64(rate) * slot
	base := max(min(tat, now+tolerance), now)
	took = int(min(int64(n), max(0, (now+tolerance-base)/slot)))
	newTAT = base + int64(took)*slot
	if took < n {
		next = newTAT + slot - tolerance
	}
	if took == 0 && tat-now <= 2*tolerance {
		newTAT = tat
	}
	return took, newTAT, next
}

// RateSlot is a slot of a rate limit of rate a second, 1/rate s rounded
// up to the nanosecond, as TakeRateSlots and ReturnRateSlots measure
// it (see rateSlots).
func RateSlot(rate int) time.Duration {
	return (time.Second + time.Duration(rate) - 1) / time.Duration(rate)
}

// TakeRateSlots reads the endpoint's rate_tat, its row locked
// (dialect.rateLock), and writes it moved by the slots it takes, in one
// transaction of relaxed durability: slots lost with a crash of the
// database (the last few hundred milliseconds of commits) let through
// about that many more.
func (s *sqlStore) TakeRateSlots(ctx context.Context, id string, rate, n int, now time.Time) (int, time.Time, error) {
	if rate <= 0 || n <= 0 {
		return max(n, 0), time.Time{}, nil
	}
	var (
		took int
		next time.Time
	)
	err := s.relaxedTx(ctx, func(tx *sql.Tx) error {
		took, next = 0, time.Time{}
		var tat, dbNow int64
		query, dest := strings.Replace(s.d.rateLock, "{now}", "", 1), []any{&tat}
		if s.leaseByDB {
			query, dest = strings.Replace(s.d.rateLock, "{now}", ", "+s.d.dbNow, 1), []any{&tat, &dbNow}
		} else {
			dbNow = nanos(now)
		}
		err := tx.QueryRowContext(ctx, s.d.rebind(query), id).Scan(dest...)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: endpoint %s", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		var newTAT, at int64
		took, newTAT, at = rateSlots(tat, dbNow, rate, n)
		if took < n {
			next = now.Add(time.Duration(at - dbNow))
		}
		if newTAT == tat {
			// (None taken, and the tat within twice the tolerance:
			// nothing to write. Beyond that, taking none, it is
			// written back to the tolerance: see rateSlots.)
			return nil
		}
		_, err = s.exec(ctx, tx, `UPDATE endpoints SET rate_tat = ? WHERE id = ?`, newTAT, id)
		return err
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	return took, next, nil
}

// ReturnRateSlots moves the endpoint's rate_tat back by n slots at rate,
// to now at the earliest, in one statement of relaxed durability (as
// TakeRateSlots); a rate_tat at or before now, which has no slot to
// give back, is left.
func (s *sqlStore) ReturnRateSlots(ctx context.Context, id string, rate, n int, now time.Time) error {
	if rate <= 0 || n <= 0 {
		return nil
	}
	back := int64(n) * int64(RateSlot(rate))
	clock, args := "CAST(? AS BIGINT)", []any{back, nanos(now), back, nanos(now), id, nanos(now)}
	if s.leaseByDB {
		clock, args = s.d.dbNow, []any{back, back, id}
	}
	return s.relaxedTx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `UPDATE endpoints SET rate_tat = CASE WHEN rate_tat - CAST(? AS BIGINT) > `+clock+` THEN rate_tat - CAST(? AS BIGINT) ELSE `+clock+` END
			WHERE id = ? AND rate_tat > `+clock, args...)
		return err
	})
}
