package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
	"github.com/brokerless/brokerless/webhook/store/storetest"
)

func openT(t *testing.T, addr string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openT(t, "sqlite:"+filepath.Join(t.TempDir(), "webhook.db"))
	})
}

func TestPostgres(t *testing.T) {
	c := pgtest.Start(t, "fsync=off")
	storetest.Run(t, func(t *testing.T) store.Store { return openT(t, c.NewDatabase(t)) })
}

// TestSQLiteReopen: what is committed survives closing and reopening the
// file, and opening an existing schema again is harmless.
func TestSQLiteReopen(t *testing.T) {
	path := "sqlite:" + filepath.Join(t.TempDir(), "webhook.db")
	s := openT(t, path)
	if err := s.CreateToken(context.Background(), &store.Token{ID: "tok_1", Hash: []byte("h")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openT(t, path)
	if _, err := s.TokenByHash(context.Background(), []byte("h")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenBadAddress(t *testing.T) {
	for _, addr := range []string{"mysql://x", "sqlite:", "file.db"} {
		if _, err := store.Open(context.Background(), addr); !errors.Is(err, store.ErrBadAddress) {
			t.Errorf("Open(%q) = %v, want ErrBadAddress", addr, err)
		}
	}
}
