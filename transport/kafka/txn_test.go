package kafka

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLogdHasNoTransactions holds the premise of the package
// documentation's Transactions section: logd refuses a transactional
// producer, so its last stable offset is its high watermark and a
// subscriber's isolation level changes nothing on it. If logd learns
// transactions, this fails: the section, and the read_uncommitted
// default, are then to be thought again.
func TestLogdHasNoTransactions(t *testing.T) {
	addr := startLogd(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("txn"), kgo.DefaultProduceTopic("txn"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	// The client asks for its producer id at BeginTransaction, or at
	// the first produce.
	if err = cl.BeginTransaction(); err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Errorf("a transactional produce to logd: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
}
