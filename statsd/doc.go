// Package statsd is brokerless's StatsD server and client: a drop-in
// replacement for Etsy statsd 0.9.0 (same input, same Graphite output),
// with the DogStatsD extensions today's clients send, several times
// faster, and honest about its own loss.
//
// # Server
//
// A Server listens on UDP (several SO_REUSEPORT readers with batch
// reads, each draining its socket into a bounded queue that another
// goroutine parses and aggregates; a port that another process already reads is refused with an
// AddrInUseError rather than shared), TCP (newline-delimited; at
// MaxConns a new connection evicts the one idle the longest, so idle
// sockets lock no client out; IdleTimeout optional) and unix
// datagram sockets, parses the
// StatsD line protocol (Parser, with no I/O), aggregates with an
// Aggregator that reproduces the arithmetic of Etsy's
// lib/process_metrics.js, and hands each flush to backends: Graphite
// plaintext with Etsy's key layout (tags as carbon accepts them), a
// Prometheus /metrics endpoint named as statsd_exporter names the same
// metrics (timers in seconds, as histograms or summaries; its mapping
// files read by its own pkg/mapper), JSON lines (on a writer, Console, or into a logd or Kafka topic,
// Log), and a repeater that forwards the raw packets to another
// StatsD. A Prometheus counter never decreases and is always a finite
// number: a counter value below zero, and an interval's sum that is not
// finite (x:1e308|c|@0.1), are left out of it and counted
// (statsd_server_negative_increments_total,
// statsd_server_nonfinite_increments_total), where the other outputs
// keep Etsy's arithmetic (NaN or Infinity for that interval). A
// mapping's scale applies first, as in statsd_exporter: through a
// negative scale the values below zero, scaled, are the increments, and
// those above zero are left out.
//
// The backends of a flush run at once, each until the next flush at
// most. What one fails to write is counted: its failed flushes
// (ServerStats.BackendErrors) and the JSON lines that never reached
// their destination (ServerStats.BackendLinesLost): for Log, the lines
// the log did not take, and those it failed, also after their flush
// stopped waiting — a late failure is its own flush's, never the next
// one's; for Console, which writes from a goroutine of its own so that
// a blocked writer (a stdout pipe nobody reads) holds no flush past its
// deadline, the lines of the flushes it dropped, one flush waiting
// behind the one being written already, and those a failed write did
// not write. Closing the server ends that goroutine: a write still
// blocked is interrupted where the writer has write deadlines (a pipe),
// else left after a second, and Close says so.
//
// Accepted lines (several per packet, separated by '\n'):
//
//	name:value|c[|@rate]     counter: adds value × 1/rate
//	name:value|g             gauge; a leading + or - is a delta
//	name:value|ms[|@rate]    timer (also h and d, DogStatsD's histogram and distribution)
//	name:value|s             set: counts unique values
//	name:1|c:2|ms            several values on one line (Etsy)
//	name:1:2:3|ms            packed values (DogStatsD)
//	name:1|c|#k:v,tag        tags (DogStatsD); they are part of the key (a second tags field is ignored, as Etsy's key has the first)
//	name:1|c|c:abc|T1700000000  container id and timestamp (DogStatsD): accepted, not used
//	name:1|c|card:low|x:y    other key:value fields (DogStatsD): ignored, as the agent does
//	name:1|c|@1e-05          a rate with an exponent: 0.00001
//	_e{5,4}:title|text|...   DogStatsD event: counted only (EventsIgnored), never a metric
//	_sc|name|0|...           DogStatsD service check: counted only (ServiceChecksIgnored)
//
// The first field after the type must be a rate, tags or one of those
// DogStatsD fields (Etsy requires a rate there); any other field after
// it is ignored, as Etsy and the Datadog agent ignore it, and after a
// rate so is a second rate or a "T" that is no timestamp ("@0.5|@0.25"
// is 0.5: Etsy ignores every field after its rate). A key:value
// field followed by a metric type ("|x:2|ms") is Etsy's next segment,
// as Etsy reads it: "name:1|c|@0.5|x:2|ms" is a counter and a timer,
// "name:1|c|@0.5|x:2|ms:3|g" a counter, a timer and a gauge (a chain of
// such segments ending in a type that is a whole field, or in a type
// whose ':' ends the line: "|x:2|ms:" is a timer and a bad line).
//
// Keys are sanitized as Etsy does: whitespace runs become '_', '/'
// becomes '-', and characters outside [a-zA-Z0-9_\-.;=] are dropped.
// Tags are appended to the key as ";k=v" (Etsy 0.9.0's layout, which
// Graphite reads as tags), sorted, so the same tags in another order are
// the same series; every ';' within a tag becomes '_' (Etsy turns only
// the first), so that a tag never reads as two. A bad line is counted (bad_lines_seen) and never
// stops the rest of its packet. White space around a type or after a
// sample rate is ignored, as Etsy ignores it; a value whose type had it
// is checked as Etsy then checks it, as a counter's ("-1|ms " is a
// timer value, "abc|s " a bad line).
//
// Where this server differs from Etsy 0.9.0 on input Etsy mishandles:
// unknown metric types (Etsy counts them as counters) and values Etsy
// reads as NaN or Infinity (hexadecimal, "Infinity", sample rates such as
// "@0", a rate whose 1/rate is infinite, "@0.000…1" with 310 digits, and
// a counter value that 1/rate takes past ±MaxFloat64) are bad lines, and
// so is "@1e-310", which Etsy reads as 1 (below); so is a line whose name
// is empty, as sent or once sanitized ("%%:1|c", ":1|c"), which Etsy
// aggregates under the empty key; a rate with an exponent is the number it writes
// ("@1e-1" is 0.1, as statsd_exporter reads it; Etsy reads the digits
// before the 'e', 1); h and d are timers, not counters; empty tags,
// and tags with an empty name or value ("#env:"), are dropped; DogStatsD
// events and service checks are counted apart (IsEvent, IsServiceCheck;
// both count each line in metrics_received), where Etsy reads them as
// metric segments, bad lines and at times a junk counter.
//
// # Client
//
// Client sends metrics from an application: counters, gauges and
// deltas, timers, histograms, distributions and sets, with sample rates
// (Sampled) and DogStatsD tags, over UDP, unix datagram sockets or TCP.
// Lines are appended to per-shard packet buffers of at most
// MaxPacketSize bytes (1432 by default), flushed when full and every
// FlushInterval (100 ms); rate-1 counter increments are summed in the
// client and sent once per flush. No call allocates and none waits: when
// the bounded send queue is full the lines are dropped and counted
// (Stats). Flush sends what is buffered at once (a context bounds the
// wait); Close flushes too. With ClientConfig.Sequence every packet
// carries the sequence line below. A metric this package's server would
// refuse is dropped and counted at the call: more than MaxTags (64) tags
// or a key longer than MaxKeyLen (1024 bytes), ClientConfig.Prefix and
// ClientConfig.Tags included, the key measured as sent (name, then one
// byte and the tag for each tag).
//
// # Loss accounting: the sequence line
//
// UDP loss makes StatsD counters approximate. A client may number its
// packets so the server counts what was lost instead of guessing: it
// puts one extra line in every datagram,
//
//	_bl.seq:<client-id>/<seq>|seq
//
// where client-id is 1 to 64 bytes of [A-Za-z0-9_.-], unique per client
// process (include a random part, so a restarted client is a new
// client), and seq is a decimal uint64 that grows by one per datagram.
// AppendSeqLine writes it and ParseSeqLine reads it.
//
// Stock servers treat the line as a harmless bad line: Etsy statsd 0.9.0
// rejects it because its value is not a number (helpers.js
// is_valid_packet: an unknown type needs a numeric value, and the value
// always contains '/'), so it only bumps bad_lines_seen; DogStatsD and
// statsd_exporter drop it as an unknown metric type. This server counts
// it apart from metrics, tracks each client's sequence (for at most
// Config.MaxClients clients, with a 64-packet reorder window) and
// reports, every flush, the packets each client lost.
package statsd
