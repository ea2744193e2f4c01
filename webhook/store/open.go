package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	// The database/sql drivers of the two dialects.
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// DefaultAddress is the database Open uses for an empty address: a SQLite
// file in the working directory.
const DefaultAddress = "sqlite:brokerless-webhook.db"

// Open opens (creating the tables if needed) the database at addr:
// "sqlite:PATH" for a SQLite file, or a PostgreSQL URL
// ("postgres://user@host/db?sslmode=disable", or "postgresql://…").
func Open(ctx context.Context, addr string) (Store, error) {
	if addr == "" {
		addr = DefaultAddress
	}
	switch {
	case strings.HasPrefix(addr, "sqlite:"):
		path := strings.TrimPrefix(addr, "sqlite:")
		if path == "" {
			return nil, fmt.Errorf("%w: %q: sqlite:PATH needs a path", ErrBadAddress, addr)
		}
		return openSQLite(ctx, path)
	case strings.HasPrefix(addr, "postgres://"), strings.HasPrefix(addr, "postgresql://"):
		if _, err := url.Parse(addr); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadAddress, err)
		}
		return openPostgres(ctx, addr)
	}
	return nil, fmt.Errorf("%w: %q: want sqlite:PATH or postgres://…", ErrBadAddress, addr)
}

// openSQLite opens a SQLite file in WAL mode with full synchronous
// commits. Every statement goes through one connection: SQLite has one
// writer at a time, and one connection turns lock contention into
// queueing in database/sql instead of SQLITE_BUSY errors.
func openSQLite(ctx context.Context, path string) (Store, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	return newSQLStore(ctx, db, sqliteDialect)
}

// openPostgres connects to PostgreSQL through pgx.
func openPostgres(ctx context.Context, addr string) (Store, error) {
	db, err := sql.Open("pgx", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAddress, err)
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connecting to PostgreSQL: %w", err)
	}
	return newSQLStore(ctx, db, postgresDialect)
}
