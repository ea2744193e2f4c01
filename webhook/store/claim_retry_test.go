package store

import (
	"context"
	"testing"
	"time"
)

// TestClaimRetriesSerializationFailure: a claim on PostgreSQL killed as
// a serialization failure (40001) is run again, and succeeds. A claim
// never waits for a row lock (it takes its deliveries FOR UPDATE SKIP
// LOCKED, reads endpoints and events unlocked, and writes only the rows
// it locked), so it is never a deadlock's victim; but with the
// database's default isolation serializable (or repeatable read) it
// can fail as one of a dangerous structure. Here it reads the endpoint's
// row as a prepared transaction (the pivot) wrote it, which read a row a
// committed transaction wrote after: the claim, the reader, is the one
// PostgreSQL can kill. With one connection, the pivot is committed
// between the claim's first run and its second.
func TestClaimRetriesSerializationFailure(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_ser", []string{"msg_1"}, "fsync=off", "default_transaction_isolation=serializable", "max_prepared_transactions=2")
	s.tries = txTries
	if err := s.CreateToken(ctx, &Token{ID: "tok_x", Name: "x", Hash: []byte("h"), Created: t0}); err != nil {
		t.Fatal(err)
	}
	pivot, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pivot.Close()
	for _, q := range []string{
		`BEGIN ISOLATION LEVEL SERIALIZABLE`,
		`SELECT name FROM tokens WHERE id = 'tok_x'`,
	} {
		if _, err := pivot.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE tokens SET name = 'y' WHERE id = 'tok_x'`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE endpoints SET description = 'pivot' WHERE id = 'ep_ser'`,
		`PREPARE TRANSACTION 'pivot'`,
	} {
		if _, err := pivot.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { s.db.ExecContext(context.Background(), `ROLLBACK PREPARED 'pivot'`) })
	pivot.Close()
	// One connection: the claim's first run holds it, and the pivot's
	// commit, asking for it meanwhile, has it before the claim runs
	// again.
	s.db.SetMaxOpenConns(1)
	held, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claimed := make(chan error, 1)
	go func() {
		jobs, err := s.Claim(ctx, ClaimRequest{Owner: "a", Now: t0, Lease: time.Minute, Limit: 10})
		if err == nil && len(jobs) != 1 {
			t.Errorf("claimed %d, want 1", len(jobs))
		}
		claimed <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); s.db.Stats().WaitCount < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the claim did not ask for the connection in 30s")
		}
		time.Sleep(time.Millisecond)
	}
	held.Close() // (the claim, the only one waiting, has it)
	committed := make(chan error, 1)
	go func() {
		_, err := s.db.ExecContext(ctx, `COMMIT PREPARED 'pivot'`)
		committed <- err
	}()
	if err := <-claimed; err != nil {
		t.Fatalf("claim killed once as a serialization failure: %v", err)
	}
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
}
