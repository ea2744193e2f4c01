package storage

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig is what every *ConfigError wraps.
	ErrBadConfig = errors.New("storage: bad config")
	// ErrClosed is returned by every call on a closed Store, Log or
	// OffsetStore, and on a Log whose topic was deleted.
	ErrClosed = errors.New("storage: closed")
	// ErrTopicExists is returned by CreateTopic for a name already taken.
	ErrTopicExists = errors.New("storage: topic already exists")
	// ErrInvalidTopic is returned for a topic name Kafka would refuse:
	// empty, ".", "..", longer than 249 bytes, or with a byte outside
	// [a-zA-Z0-9._-].
	ErrInvalidTopic = errors.New("storage: invalid topic name")
	// ErrInvalidPartitions is returned by CreateTopic for a partition
	// count below 1 or above MaxPartitions.
	ErrInvalidPartitions = errors.New("storage: invalid partition count")
	// ErrUnknownTopicOrPartition is returned for a topic or partition
	// that does not exist.
	ErrUnknownTopicOrPartition = errors.New("storage: unknown topic or partition")
	// ErrCorruptBatch marks bytes that are not a well-framed RecordBatch
	// with a matching CRC (Kafka's CORRUPT_MESSAGE). Batch errors wrap it
	// in a *BatchError.
	ErrCorruptBatch = errors.New("storage: corrupt record batch")
	// ErrInvalidBatch marks a well-framed batch this log does not accept:
	// a magic other than 2, a record count that does not match its
	// offsets, a transactional or control batch (Kafka's INVALID_RECORD
	// or UNSUPPORTED_FOR_MESSAGE_FORMAT).
	ErrInvalidBatch = errors.New("storage: invalid record batch")
	// ErrBatchTooLarge marks a batch over MaxBatchBytes (Kafka's
	// MESSAGE_TOO_LARGE).
	ErrBatchTooLarge = errors.New("storage: record batch too large")
	// ErrOffsetOutOfRange is returned by Read for an offset below the log
	// start or above the log end.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrOutOfOrderSequence is returned by Append for an idempotent
	// batch whose first sequence does not follow the producer's last.
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")
	// ErrInvalidProducerEpoch is returned by Append for an idempotent
	// batch whose producer epoch is older than one already seen.
	ErrInvalidProducerEpoch = errors.New("storage: invalid producer epoch")
	// ErrLogFailed is returned by every write to a Log after a write or
	// fsync to its files failed: what is on disk past the last good
	// fsync is no longer known, so the partition is fenced and nothing
	// more is acknowledged until Log.Unfence (which Store.Maintain
	// calls) recovers it, or the Store is reopened.
	ErrLogFailed = errors.New("storage: log failed on an I/O error")
	// ErrCorruptFile marks a storage file (topic metadata, offsets log)
	// that cannot be decoded.
	ErrCorruptFile = errors.New("storage: corrupt file")
)

// BatchError says what is wrong with a record batch.
type BatchError struct {
	Kind   error // ErrCorruptBatch, ErrInvalidBatch or ErrBatchTooLarge
	Reason string
}

func (e *BatchError) Error() string { return fmt.Sprintf("%v: %s", e.Kind, e.Reason) }

func (e *BatchError) Unwrap() error { return e.Kind }

// RecordsError refuses a well-formed batch for some of its records, as
// Kafka's record errors do (INVALID_RECORD, each record named by its
// position in the batch): the whole batch is refused, nothing of it
// appended. Unwrap gives ErrInvalidBatch.
type RecordsError struct {
	Records []int32 // positions in the batch, from 0, ascending
	Reason  string  // why each of them is refused
}

func (e *RecordsError) Error() string {
	return fmt.Sprintf("%v: %d of its records refused: %s", ErrInvalidBatch, len(e.Records), e.Reason)
}

func (e *RecordsError) Unwrap() error { return ErrInvalidBatch }

// reasonKeyless is Kafka's reason for a record without a key on a
// compacted topic.
const reasonKeyless = "compacted topic cannot accept message without key"

// Batch errors are values made once, so a flood of bad batches does not
// allocate.
var (
	errShort        = &BatchError{ErrCorruptBatch, "shorter than a batch header"}
	errLength       = &BatchError{ErrCorruptBatch, "length field does not match the bytes"}
	errCRC          = &BatchError{ErrCorruptBatch, "CRC-32C mismatch"}
	errRecordsFrame = &BatchError{ErrCorruptBatch, "records do not fill the batch exactly"}
	errRecordsShort = &BatchError{ErrCorruptBatch, "records end before the record count"}
	errBadRecord    = &BatchError{ErrCorruptBatch, "a record does not decode"}
	errRecordOffset = &BatchError{ErrInvalidBatch, "record offset deltas are not 0, 1, 2…"}
	errOffsetOrder  = &BatchError{ErrCorruptBatch, "offsets do not ascend"}
	errMagic        = &BatchError{ErrInvalidBatch, "magic is not 2"}
	errCount        = &BatchError{ErrInvalidBatch, "record count does not match last offset delta"}
	errNoRecords    = &BatchError{ErrInvalidBatch, "no records"}
	errTxn          = &BatchError{ErrInvalidBatch, "transactional and control batches are not supported"}
	errCodec        = &BatchError{ErrInvalidBatch, "unknown compression codec"}
	errSequence     = &BatchError{ErrInvalidBatch, "negative base sequence with a producer ID"}
	errTooLarge     = &BatchError{ErrBatchTooLarge, "over MaxBatchBytes"}
)

// ConfigError is a Config (or TopicConfig) field whose value is outside
// what it allows. Field is the Go field's name, as in Config.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("storage: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows, so a command
// line can name the flag that set it.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }

func corruptFile(path, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrCorruptFile, path, reason)
}
