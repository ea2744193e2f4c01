// Package storage is logd's log storage: Kafka's model on one machine.
// A [Store] is a directory of topics; a topic has a fixed number of
// partitions; a partition is a [Log], an append-only sequence of Kafka
// RecordBatch v2 bytes, stored exactly as producers sent them (compressed
// batches stay compressed) with server-assigned offsets. The Kafka
// protocol server (logd) sits on top; nothing here speaks the network.
//
// # Appending and durability
//
// [Log.Append] validates a batch (length, magic 2, CRC-32C over
// attributes..end, record count; the partition leader epoch is never
// checked), writes its base offset in place and appends it to the active
// segment. Idempotent producers (producer ID ≥ 0) are deduplicated
// against their last five batches: a retry is answered with the original
// offsets and not written again.
//
// [Log.WaitDurable] waits by the [FsyncPolicy]. Under FsyncAlways (the
// default) one goroutine per partition fdatasyncs the active segment
// whenever batches are waiting, so every append that arrives during an
// fsync shares the next one (group commit), and the waiter returns once
// its offset is on disk. An fsync covers every append completed when it
// starts and never waits for one in progress. Each append also starts
// writing its batch to the device at once ([vfs.WriteBehinder], a hint),
// so the disk works while the next fsync waits. Readers see a batch only
// once it is durable:
// the high watermark ([Log.HighWatermark]) is the durable end, so no
// consumer ever reads a record that a crash could take back and whose
// offset would then be reused. Under FsyncInterval and FsyncNever the high
// watermark is the log end and WaitDurable returns at once: acknowledged
// and consumed data can be lost to a power failure (see FsyncPolicy).
// [Log.WaitAppended] is WaitDurable for an Append's result, which also
// fails if the partition was fenced and reloaded since the append: the
// reload may have cut the batch and handed its offsets to later appends,
// whose fsync would otherwise be taken for its own.
// Appends then start the device writing every 1 MiB of whole pages (as
// RocksDB's bytes_per_sync), so a segment roll, whose fsync appends wait
// for, does not find the whole segment still to write.
//
// # The file layer
//
// Every file operation goes through Config.FS ([vfs.FS]): the real file
// system by default. Tests put [vfs.Lazy] under a Store — a disk that
// keeps only what a completed fdatasync (and, for directory entries, a
// directory fsync) made durable — and cut its power at random moments
// to check each FsyncPolicy's promise, and [vfs.Faults] to fail writes
// as a full disk does. A new directory's entry is fsynced into its
// parent before anything in it counts as durable.
//
// # Reading
//
// [Log.Read] returns whole batches from the one holding an offset, at
// most maxBytes but always at least one batch, from a single segment,
// read with one pread into the caller's buffer ([Log.ReadAppend]). No
// batch is served unless this process has CRC-checked it: batches are
// checked when appended and in recovery, and a segment trusted at Open
// is checked as it is first read (each segment remembers the prefix
// checked, so a replay pays for the CRC once). A corrupt batch is never
// served. Where a read ended is remembered, so a consumer reading on
// skips the index lookup.
//
// # On-disk layout
//
//	<Dir>/topics                          topic metadata: JSON + CRC-32C
//	<Dir>/<topic>-<partition>/            one directory per partition
//	    00000000000000000000.log          segment: batches, named by base offset
//	    00000000000000000000.index        sparse offset index
//	    00000000000000000000.timeindex    time index
//	    recovery-point                    checkpoint: offset + CRC
//	    producer-state                    idempotent producers as of the recovery point
//	<Dir>/__group-offsets/offsets.log     consumer group offsets (see OffsetStore)
//
// A segment's .log is a plain concatenation of RecordBatch v2 bytes, in
// offset order; a segment rolls when the next batch would take it past
// SegmentBytes or it was started more than SegmentAge ago. Its .index
// holds 8-byte entries (offset − base as u32, file position as u32), one
// for the first batch after every IndexIntervalBytes. Its .timeindex
// holds 16-byte entries (timestamp i64, offset − base u32, position
// u32) meaning "every batch before this position has a MaxTimestamp ≤
// timestamp", added at offset-index points when the largest timestamp
// grew; its last entry seals the segment: largest timestamp, next offset
// − base, size. The active segment keeps its indexes in memory and
// writes them when it rolls and on Close, so appending costs no index
// I/O; sealed segments' indexes are read from their files (memory does
// not grow with the data kept). All integers are big-endian.
//
// The small state files (topics, recovery-point, producer-state) end
// with a CRC-32C of their contents and are replaced atomically: written
// to <name>.tmp, fsynced, renamed, directory fsynced.
//
// # Crash recovery
//
// The recovery point of a partition is the offset below which every
// batch, with its segment's indexes, was fsynced; it is written when a
// segment rolls and on Close. On Open a segment is trusted as it is only
// if it lies wholly below the recovery point and its indexes pass a
// sanity check (whole entries, ascending, in range, the seal matching the
// log's size). Every other segment is read batch by batch — length,
// magic, CRC-32C, offsets ascending (contiguous in the last segment,
// which compaction never touches) and below the next segment — its
// indexes are rebuilt, and it is truncated at the first batch that
// fails; later segments are then deleted. A missing or damaged index is
// rebuilt, never a reason to refuse to start. The idempotent-producer
// state is loaded from its snapshot and brought up to date from the
// batch headers after it (or rebuilt from the whole log).
//
// # Retention and compaction
//
// Retention ([Log.ApplyRetention]) deletes whole segments, oldest first,
// never the active one: those whose newest timestamp is older than
// RetentionAge, and those that take the partition over RetentionBytes.
// Compaction ([Log.Compact], cleanup policy compact) rewrites the sealed
// segments keeping the latest record of each key. A compacted partition
// refuses, as Kafka does, a batch with a record without a key (a
// [RecordsError] naming them; nothing of the batch is appended). Offsets
// never change (a rewritten batch keeps its base and last offset, its surviving
// records their offset deltas), a batch left with no record is dropped
// (leaving a gap in the offsets; a read from inside one gets the next
// batch) unless it is an idempotent producer's last, whose header is kept
// to carry its sequence numbers, tombstones (null values) are dropped
// once older than DeleteRetention, and compressed batches are
// recompressed with their codec; a sealed segment left empty is deleted
// unless it is the first. A segment is rewritten to <base>.log.cleaned (with
// its indexes), fsynced, renamed to <base>.log.swap — the commit point —
// and renamed over <base>.log; Open completes a .swap and deletes a
// .cleaned, so a crash at any point leaves the old or the new segment,
// never a mix.
//
// Background maintenance ([Store.Maintain]) applies both every
// MaintenanceInterval (15 s by default, as often as Kafka's cleaner
// looks for work) and unfences fenced partitions; a compacted partition
// is also compacted as soon as it seals a segment.
//
// # Consumer group offsets
//
// [OffsetStore] (from [Store.Offsets]) keeps committed offsets in an
// append-only file of CRC'd records, fdatasynced on every Commit,
// replayed on Open record by record (a torn tail is cut; the file is
// never read whole) and rewritten once it reaches twice what the
// rewrite holds (one record per group) and 1 MiB. The rewrite runs in
// the background, as Kafka compacts __consumer_offsets: commits go on
// while it writes and fsyncs the live offsets, and it appends those made
// meanwhile before it renames its file over the log (offsets_rewrite.go).
// A group's offsets expire as Kafka's do (offsets.retention.minutes):
// once it has gone OffsetsRetention (7 days) without a commit and
// without members, at a maintenance pass or when a new group would
// exceed MaxGroups or MaxOffsetBytes; a group with members (logd's
// coordinator tells the store which, [OffsetStore.SetActive]) keeps
// them. The offsets held are bounded by MaxGroups groups and by
// MaxOffsetBytes bytes ([OffsetStore.Bytes]; 64 MiB by default): a
// commit that would pass either is refused (ErrTooManyGroups,
// ErrOffsetsFull), one that adds nothing never is, so a store over a
// lowered limit still opens and serves. The file's rewrite and its
// replay on Open are bounded with them.
//
// # Resources
//
// Memory does not grow with the data kept: per partition, the active
// segment's indexes (at most SegmentBytes/IndexIntervalBytes entries),
// the producer state (at most MaxProducers) and a few words per segment;
// scans use 1 MiB buffers, compaction a key map bounded by
// CompactMaxKeys; committed offsets are bounded by MaxOffsetBytes. Each
// segment holds three open files. Under FsyncAlways each partition has
// one goroutine, the group committer; the Store has one for
// maintenance and, under FsyncInterval, one timer.
//
// # Errors
//
// Append's errors map to Kafka's codes: ErrCorruptBatch to
// CORRUPT_MESSAGE, ErrInvalidBatch (a *RecordsError among them: Kafka's
// record errors) to INVALID_RECORD, ErrBatchTooLarge
// to MESSAGE_TOO_LARGE, ErrOutOfOrderSequence and
// ErrInvalidProducerEpoch to theirs, ErrLogFailed to
// KAFKA_STORAGE_ERROR; Read's ErrOffsetOutOfRange to
// OFFSET_OUT_OF_RANGE.
package storage
