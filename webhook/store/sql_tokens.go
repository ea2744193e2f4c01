package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

func (s *sqlStore) CreateToken(ctx context.Context, t *Token) error {
	_, err := s.exec(ctx, s.db, `INSERT INTO tokens (id, name, hash, created, revoked) VALUES (?, ?, ?, ?, ?)`,
		t.ID, t.Name, t.Hash, nanos(t.Created), nanos(t.Revoked))
	return err
}

func (s *sqlStore) CreateFirstToken(ctx context.Context, t *Token) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// Under PostgreSQL's READ COMMITTED, two inserts guarded by NOT
		// EXISTS can both see no token; the lock makes them take turns.
		// SQLite runs the one statement under its database write lock.
		if s.d.tokenLock != "" {
			if _, err := tx.ExecContext(ctx, s.d.tokenLock); err != nil {
				return err
			}
		}
		var err error
		n, err = s.exec(ctx, tx, `INSERT INTO tokens (id, name, hash, created, revoked)
			SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM tokens)`,
			t.ID, t.Name, t.Hash, nanos(t.Created), nanos(t.Revoked))
		return err
	})
	return n == 1, err
}

func scanToken(r scanner, t *Token) error {
	var created, revoked int64
	if err := r.Scan(&t.ID, &t.Name, &t.Hash, &created, &revoked); err != nil {
		return err
	}
	t.Created, t.Revoked = fromNanos(created), fromNanos(revoked)
	return nil
}

func (s *sqlStore) TokenByHash(ctx context.Context, hash []byte) (*Token, error) {
	t := new(Token)
	err := scanToken(s.db.QueryRowContext(ctx, s.d.rebind(`SELECT id, name, hash, created, revoked FROM tokens WHERE hash = ? AND revoked = 0`), hash), t)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: token", ErrNotFound)
	}
	return t, err
}

func (s *sqlStore) ListTokens(ctx context.Context) ([]*Token, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, hash, created, revoked FROM tokens ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*Token
	for rows.Next() {
		t := new(Token)
		if err := scanToken(rows, t); err != nil {
			return nil, err
		}
		list = append(list, t)
	}
	return list, rows.Err()
}

func (s *sqlStore) RevokeToken(ctx context.Context, id string, now time.Time) error {
	n, err := s.exec(ctx, s.db, `UPDATE tokens SET revoked = ? WHERE id = ? AND revoked = 0`, nanos(now), id)
	if err == nil && n == 0 {
		err = fmt.Errorf("%w: token %s", ErrNotFound, id)
	}
	return err
}
