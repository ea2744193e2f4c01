// Package source turns the records of a log (a logd or Kafka topic read
// by a consumer group, through package transport) into webhook events.
//
// Each record becomes one event: its type from a header (or a default),
// its data the record's payload (as it is when it is JSON, else as a JSON
// string), and its idempotency key KeyPrefix+"TOPIC/PARTITION/OFFSET/HASH"
// (HASH: of the event's type and data). The API refuses keys beginning
// dispatch.ReservedKeyPrefix, so no client's event can take a record's
// key and make the record a silent duplicate. HASH keeps a topic deleted
// and re-created (its offsets starting again at 0) from having its
// records taken for the old topic's: a record of the new topic is a
// duplicate only if it has the same offset, type and data as one of the
// old. (Two clusters with a same-named topic sharing one database are
// alike.) A record is
// acknowledged (its offset committed) only after its event is in the
// outbox, so a crash between the two loses nothing, and the record read
// again after the crash finds its event already stored: no duplicate.
// A record of which no event can be made (its type header not valid
// UTF-8, holding a NUL or longer than dispatch.MaxTypeLen; its payload,
// JSON or not, not valid UTF-8, which no Standard Webhooks receiver
// could verify) is skipped: logged, counted and acknowledged, so it
// cannot stop the source.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/webhook/dispatch"
	"github.com/brokerless/brokerless/webhook/store"
)

// KeyPrefix begins the idempotency key of every event made of a record.
const KeyPrefix = dispatch.ReservedKeyPrefix + "source:"

// DefaultType is the event type of a record without a type header.
const DefaultType = "log.record"

// DefaultTypeHeader names the record header holding the event type.
const DefaultTypeHeader = "type"

// ErrNotAcknowledging is a subscriber that cannot acknowledge (not a
// consumer group member): offsets could not be committed after the
// outbox insert.
var ErrNotAcknowledging = errors.New("source: the subscriber does not acknowledge (a consumer group is needed)")

// Config configures Run.
type Config struct {
	// Subscriber reads the log; it must implement transport.Acknowledger.
	Subscriber transport.Subscriber
	// Store receives the events.
	Store store.Store
	// Type is the event type of records without TypeHeader (DefaultType).
	Type string
	// TypeHeader names the header holding a record's type (DefaultTypeHeader).
	TypeHeader string
	// Notify, if set, is called after each event stored (the dispatcher's Notify).
	Notify func()
	// Now is the clock (time.Now).
	Now func() time.Time
	// Logger gets gaps in the log and bad records (discarded by default).
	Logger *slog.Logger
	// Stats, if set, counts what Run did.
	Stats *Stats
}

// Stats counts records read, events created, records whose event was
// already stored (read again after a crash), bad records (skipped: no
// event can be made of them) and gaps in the log.
type Stats struct {
	Records, Events, Duplicates, Bad, Gaps atomic.Int64
}

// Run reads records and stores their events until ctx is done (it
// returns nil then) or the subscriber or store fails. A bad record, of
// which no event can be made (see Event), is logged, counted
// (Stats.Bad) and acknowledged: it is skipped, and Run goes on.
func Run(ctx context.Context, cfg Config) error {
	ack, ok := cfg.Subscriber.(transport.Acknowledger)
	if !ok {
		return ErrNotAcknowledging
	}
	if cfg.Type == "" {
		cfg.Type = DefaultType
	}
	if err := dispatch.CheckType(cfg.Type); err != nil {
		return fmt.Errorf("source: Config.Type: %w", err)
	}
	if cfg.TypeHeader == "" {
		cfg.TypeHeader = DefaultTypeHeader
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stats == nil {
		cfg.Stats = new(Stats)
	}
	for {
		ev, err := cfg.Subscriber.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("source: %w", err)
		}
		switch ev.Kind {
		case transport.EventMessage:
			m := ev.Message
			cfg.Stats.Records.Add(1)
			e, err := Event(m, cfg.Type, cfg.TypeHeader, cfg.Now())
			if err != nil {
				// Stored or not, it would be refused again on every
				// restart: skip it, or it stops the source for good.
				cfg.Stats.Bad.Add(1)
				cfg.Logger.Warn("webhook source: bad record skipped, no event for it", "stream", m.Stream.String(), "offset", m.Seq, "err", err)
			} else if err := insert(ctx, cfg, m, e); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if err := ack.Ack(ctx, m.Stream, m.Seq); err != nil && ctx.Err() == nil {
				return fmt.Errorf("source: acknowledging %s offset %d: %w", m.Stream, m.Seq, err)
			}
		case transport.EventGap:
			cfg.Stats.Gaps.Add(1)
			cfg.Logger.Warn("webhook source: records missing from the log, no events for them", "gap", ev.Gap.String())
		}
	}
}

// insert stores event e of record m and counts it.
func insert(ctx context.Context, cfg Config, m transport.Message, e *store.Event) error {
	created, err := cfg.Store.InsertEvent(ctx, e)
	if err != nil {
		return fmt.Errorf("source: storing the event of %s offset %d: %w", m.Stream, m.Seq, err)
	}
	if created {
		cfg.Stats.Events.Add(1)
		if cfg.Notify != nil {
			cfg.Notify()
		}
	} else {
		cfg.Stats.Duplicates.Add(1)
	}
	return nil
}

// Event is the event of record m: type from header typeHeader (else
// typ), data the payload (a JSON string when it is not JSON), and
// idempotency key Key(m, type, data). A record of which no event can
// be made (a type refused by dispatch.CheckType, a payload not valid
// UTF-8) is an error wrapping dispatch.ErrBadEvent.
func Event(m transport.Message, typ, typeHeader string, now time.Time) (*store.Event, error) {
	for _, h := range m.Headers {
		if h.Key == typeHeader && len(h.Value) > 0 {
			typ = string(h.Value)
		}
	}
	if err := dispatch.CheckType(typ); err != nil {
		return nil, err
	}
	if err := dispatch.CheckData(m.Payload); err != nil {
		return nil, err
	}
	data := json.RawMessage(m.Payload)
	if !json.Valid(m.Payload) {
		data, _ = json.Marshal(string(m.Payload))
	}
	return dispatch.NewEvent(typ, data, Key(m, typ, data), now), nil
}

// Key is the idempotency key of the event of record m, of type typ and
// data data: KeyPrefix+"TOPIC/PARTITION/OFFSET/HASH", HASH the first 64
// bits of SHA-256 over typ, a NUL and data, in hexadecimal. A record read
// again has the same key; a record at the same offset of a re-created
// topic has another unless its type and data are the same.
func Key(m transport.Message, typ string, data []byte) string {
	h := sha256.New()
	h.Write([]byte(typ))
	h.Write([]byte{0})
	h.Write(data)
	return fmt.Sprintf("%s%s/%d/%d/%x", KeyPrefix, m.Stream.Topic, m.Stream.Partition, m.Seq, h.Sum(nil)[:8])
}
