package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
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

// firstTokenOnce opens n stores on one database at addr and has each
// create its first token at the same moment: exactly one must succeed.
func firstTokenOnce(t *testing.T, addr string, n int) {
	t.Helper()
	stores := make([]store.Store, n)
	for i := range stores {
		stores[i] = openT(t, addr)
	}
	start := make(chan struct{})
	created := make(chan bool, n)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := s.CreateFirstToken(context.Background(), &store.Token{ID: fmt.Sprint("tok_", i), Name: "admin", Hash: []byte(fmt.Sprint("hash", i))})
			if err != nil {
				t.Error(err)
			}
			created <- ok
		}()
	}
	close(start)
	wg.Wait()
	close(created)
	n = 0
	for ok := range created {
		if ok {
			n++
		}
	}
	list, err := stores[0].ListTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(list) != 1 {
		t.Fatalf("%d stores created their first token, %d tokens stored; want 1 and 1", n, len(list))
	}
}

// TestFirstTokenOncePostgres: dispatchers starting together on a new
// PostgreSQL database create one admin token between them (rounds on
// fresh databases, four stores each).
func TestFirstTokenOncePostgres(t *testing.T) {
	c := pgtest.Start(t, "fsync=off")
	for range 10 {
		firstTokenOnce(t, c.NewDatabase(t), 4)
	}
}

// TestFirstTokenOnceSQLite: the same on one SQLite file.
func TestFirstTokenOnceSQLite(t *testing.T) {
	for i := range 5 {
		firstTokenOnce(t, "sqlite:"+filepath.Join(t.TempDir(), fmt.Sprint("first", i, ".db")), 4)
	}
}
