package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/groups"
	"github.com/brokerless/brokerless/logd/storage"
)

var logdCmd = command{
	name:     "logd",
	summary:  "run the log daemon: durable topics, offsets and replay over the Kafka protocol",
	synopsis: "--dir DIR [--listen 127.0.0.1:9092] [--http 127.0.0.1:9644] [flags]",
	about: `
Runs logd, a single-node log with Kafka's model — topics, partitions,
offsets, consumer groups, retention, compaction, idempotent producers —
that speaks the Kafka wire protocol, so kcat, franz-go, librdkafka and
other Kafka clients work against it unchanged.

Durability is explicit. With --fsync always (the default) a produce with
acks=all is answered only once its batch is on disk; concurrent producers
share fsyncs (group commit). --fsync interval syncs every
--fsync-interval; --fsync never leaves it to the operating system, and a
power loss can then lose acknowledged records. On start, logd checks
every batch written after the last synced point, cuts a torn tail and
rebuilds damaged indexes.

Committed offsets are kept per consumer group and expire as Kafka's
do: once a group has gone --offsets-retention (default 7 days) without
a commit and without members. A group with members keeps them however
long it goes without committing. The offsets of all groups together hold
at most --max-offset-bytes (64 MiB); a commit that would pass it, none
expired, is refused with INVALID_COMMIT_OFFSET_SIZE and counted in
/metrics. Commits for partitions that do not exist are refused.

Connections are bounded: --max-connections in all, --max-connections-per-ip
from one address; a new connection must send its first request within
--request-timeout, and one idle for --idle-timeout is closed. The requests
of all connections hold at most --max-inflight-request-bytes of memory.

It prints where it listens. The HTTP endpoint serves /healthz (503 with
the reasons while clients are refused or a partition is fenced) and
Prometheus /metrics. SIGINT or SIGTERM shut it down cleanly.

With --tls-cert and --tls-key it speaks TLS. With --users (a file made
by 'brokerless logd user add') every client must authenticate — SASL
PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, or a client certificate verified
against --tls-client-ca whose subject CN is a user's name — before
anything but ApiVersions and the SASL handshake is answered, and each
request is checked against the user's grants (produce, consume, group,
admin on name prefixes). The file holds salted SCRAM hashes, never
passwords; logd refuses it if other users may read it. logd reads the
file once, at start (no reload, on SIGHUP or otherwise): restart it
after 'logd user add' or 'logd user remove'.`,
	examples: `
# A log in ./data, Kafka clients on 127.0.0.1:9092; topics are created
# on first use, as Kafka does.
brokerless logd --dir ./data

# Then, with kcat: produce and consume.
echo hello | kcat -b 127.0.0.1:9092 -t events -P
kcat -b 127.0.0.1:9092 -t events -C -o beginning -e

# Keep a day or 10 GiB per partition; refuse unknown topics (clients
# get UNKNOWN_TOPIC_OR_PARTITION).
brokerless logd --dir ./data --auto-create=false --retention 24h --retention-bytes 10737418240

# Forget the committed offsets of consumer groups gone for a day (no
# members, no commits) instead of Kafka's 7 days.
brokerless logd --dir ./data --offsets-retention 24h

# TLS and SCRAM: only users of ./users.json, each within their grants.
brokerless logd --dir ./data --tls-cert server.pem --tls-key server.key --users users.json
kcat -b 127.0.0.1:9092 -t orders.eu -C -X security.protocol=SASL_SSL -X ssl.ca.location=ca.pem \
  -X sasl.mechanisms=SCRAM-SHA-256 -X sasl.username=alice -X sasl.password=...`,
	run: runLogd,
}

func runLogd(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	var (
		cfg       logd.Config
		listen    = fs.String("listen", "127.0.0.1:9092", "address for Kafka clients")
		httpAddr  = fs.String("http", "127.0.0.1:9644", "address for /healthz and /metrics (empty: none)")
		fsync     = fs.String("fsync", "always", "durability: always (group commit), interval, never")
		advertise = fs.String("advertise", "", "host:port clients are told to connect to (default: the listen address)")
	)
	cfg.Storage.RetentionAge, cfg.Storage.SegmentAge = 7*24*time.Hour, 7*24*time.Hour
	cfg.Storage.OffsetsRetention = storage.DefaultOffsetsRetention
	fs.StringVar(&cfg.Storage.Dir, "dir", "", "data directory (required)")
	fs.DurationVar(&cfg.Storage.FsyncInterval, "fsync-interval", time.Second, "period of --fsync interval")
	fs.Var(durationOrNever{&cfg.Storage.RetentionAge}, "retention", "delete segments older than this (negative, e.g. -1: never)")
	fs.Int64Var(&cfg.Storage.RetentionBytes, "retention-bytes", -1, "delete the oldest segments while a partition is larger (negative: no limit)")
	fs.Int64Var(&cfg.Storage.SegmentBytes, "segment-bytes", 128<<20, "roll a segment at this size (1 KiB to 1 GiB)")
	fs.Var(durationOrNever{&cfg.Storage.SegmentAge}, "segment-age", "roll a segment at this age (negative: never)")
	fs.Var(durationOrNever{&cfg.Storage.OffsetsRetention}, "offsets-retention", "delete a consumer group's committed offsets once it has gone this long without a commit and without members, as Kafka's offsets.retention.minutes (negative: never)")
	fs.Int64Var(&cfg.Storage.MaxOffsetBytes, "max-offset-bytes", storage.DefaultMaxOffsetBytes, "memory the committed offsets of all consumer groups may hold (each committed partition counts as its topic and metadata plus 128 bytes); a commit past it, none expired, is refused with INVALID_COMMIT_OFFSET_SIZE; set below what a restarted logd holds, it still serves them and refuses only growth")
	fs.DurationVar(&cfg.Storage.MaintenanceInterval, "maintenance-interval", storage.DefaultMaintenanceInterval, "how often retention, compaction and offsets expiry run and fenced partitions retry (compacted topics also compact when a segment rolls)")
	autoCreate := fs.Bool("auto-create", true, "create unknown topics on first produce or metadata request, as Kafka does (false: clients get UNKNOWN_TOPIC_OR_PARTITION)")
	fs.Int32Var(&cfg.DefaultPartitions, "partitions", 1, "partitions of auto-created topics")
	fs.IntVar(&cfg.MaxRequestBytes, "max-request-bytes", logd.DefaultMaxRequestBytes, "largest request accepted (at least 1024); larger ones close the connection")
	fs.IntVar(&cfg.MaxInFlightRequestBytes, "max-inflight-request-bytes", 0, "memory the requests of all connections may hold together, at least 2 × --max-request-bytes; beyond it connections wait (default: 256 MiB or 2 × --max-request-bytes, the larger)")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", logd.DefaultRequestTimeout, "a request, and a new connection's first request, must arrive whole within this time, or the connection is closed")
	fs.IntVar(&cfg.MaxConnections, "max-connections", logd.DefaultMaxConnections, "open client connections; more are refused and /healthz reports not ready")
	fs.IntVar(&cfg.MaxConnectionsPerIP, "max-connections-per-ip", 0, "open connections from one client address; more are refused (default: a quarter of --max-connections)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", logd.DefaultIdleTimeout, "close a connection that sends no request for this long; also the longest a Fetch long-poll or an acks=all produce waits, whatever the client asks")
	fs.IntVar(&cfg.MaxUnauthenticatedRequestBytes, "max-unauthenticated-request-bytes", 0, "with --users, largest request accepted before a connection authenticates, in [1024, --max-request-bytes]; larger ones close it (default: 512 KiB, Kafka's sasl.server.max.receive.size, or --max-request-bytes if smaller)")
	fs.DurationVar(&cfg.MaxRebalanceTimeout, "max-rebalance-timeout", groups.DefaultMaxRebalanceTimeout, "longest rebalance timeout a consumer-group member may ask for (at least 6s); a longer one is lowered to it, so a member that never rejoins cannot stall its group")
	authFlags := addLogdAuthFlags(fs)
	if err := inv.parse(fs); err != nil {
		return err
	}
	if err := checkLogdFlags(fs, &cfg); err != nil {
		return err
	}
	cfg.DisableAutoCreateTopics = !*autoCreate
	var err error
	if cfg.Storage.Fsync, err = storage.ParseFsyncPolicy(*fsync); err != nil {
		return usagef("--fsync %s: must be always, interval or never", *fsync)
	}
	if err := checkListenAddr("listen", *listen); err != nil {
		return err
	}
	if *httpAddr != "" {
		if err := checkListenAddr("http", *httpAddr); err != nil {
			return err
		}
	}
	if *advertise != "" {
		if cfg.AdvertisedHost, cfg.AdvertisedPort, err = parseAdvertise(*advertise); err != nil {
			return err
		}
	}
	tlsConfig, authNote, err := authFlags.apply(fs, &cfg)
	if err != nil {
		return err
	}
	cfg.Logger = inv.log
	srv, err := logd.New(cfg)
	if err != nil {
		return configError(err, logdFlagOf)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		srv.Close()
		return err
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	var hln net.Listener
	if *httpAddr != "" {
		if hln, err = net.Listen("tcp", *httpAddr); err != nil {
			ln.Close()
			srv.Close()
			return err
		}
	}
	fmt.Fprintf(inv.err, "logd listening on %s (Kafka protocol), data in %s, fsync %s\n", ln.Addr(), cfg.Storage.Dir, *fsync)
	if authNote != "" {
		fmt.Fprintln(inv.err, authNote)
	}
	var hs *http.Server
	if hln != nil {
		hs = &http.Server{Handler: srv.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(hln)
		fmt.Fprintf(inv.err, "logd http on http://%s (/healthz, /metrics)\n", hln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		fmt.Fprintln(inv.err, "logd: shutting down")
	case err = <-served:
	}
	if hs != nil {
		hs.Close()
	}
	if cerr := srv.Close(); err == nil || errors.Is(err, logd.ErrClosed) {
		err = cerr
	}
	return err
}
