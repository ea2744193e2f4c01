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

It prints where it listens. The HTTP endpoint serves /healthz and
Prometheus /metrics. SIGINT or SIGTERM shut it down cleanly.

With --tls-cert and --tls-key it speaks TLS. With --users (a file made
by 'brokerless logd user add') every client must authenticate — SASL
PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, or a client certificate verified
against --tls-client-ca whose subject CN is a user's name — before
anything but ApiVersions and the SASL handshake is answered, and each
request is checked against the user's grants (produce, consume, group,
admin on name prefixes). The file holds salted SCRAM hashes, never
passwords; logd refuses it if other users may read it.`,
	examples: `
# A log in ./data, Kafka clients on 127.0.0.1:9092.
brokerless logd --dir ./data

# Create topics on first use, keep a day or 10 GiB per partition.
brokerless logd --dir ./data --auto-create --retention 24h --retention-bytes 10737418240

# Then, with kcat: produce and consume.
echo hello | kcat -b 127.0.0.1:9092 -t events -P
kcat -b 127.0.0.1:9092 -t events -C -o beginning -e

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
	fs.StringVar(&cfg.Storage.Dir, "dir", "", "data directory (required)")
	fs.DurationVar(&cfg.Storage.FsyncInterval, "fsync-interval", time.Second, "period of --fsync interval")
	fs.DurationVar(&cfg.Storage.RetentionAge, "retention", 7*24*time.Hour, "delete segments older than this (-1ns: never)")
	fs.Int64Var(&cfg.Storage.RetentionBytes, "retention-bytes", -1, "delete the oldest segments while a partition is larger (-1: no limit)")
	fs.Int64Var(&cfg.Storage.SegmentBytes, "segment-bytes", 128<<20, "roll a segment at this size")
	fs.DurationVar(&cfg.Storage.SegmentAge, "segment-age", 7*24*time.Hour, "roll a segment at this age")
	fs.BoolVar(&cfg.AutoCreateTopics, "auto-create", false, "create unknown topics on first produce or metadata request")
	fs.Int32Var(&cfg.DefaultPartitions, "partitions", 1, "partitions of auto-created topics")
	fs.IntVar(&cfg.MaxRequestBytes, "max-request-bytes", logd.DefaultMaxRequestBytes, "largest request accepted; larger ones close the connection")
	authFlags := addLogdAuthFlags(fs)
	if err := inv.parse(fs); err != nil {
		return err
	}
	if cfg.Storage.Dir == "" {
		return usagef("--dir is required")
	}
	var err error
	if cfg.Storage.Fsync, err = storage.ParseFsyncPolicy(*fsync); err != nil {
		return usagef("--fsync: %v", err)
	}
	if *advertise != "" {
		host, port, err := net.SplitHostPort(*advertise)
		if err != nil {
			return usagef("--advertise: %v", err)
		}
		var p int
		fmt.Sscan(port, &p)
		cfg.AdvertisedHost, cfg.AdvertisedPort = host, int32(p)
	}
	tlsConfig, authNote, err := authFlags.apply(fs, &cfg)
	if err != nil {
		return err
	}
	cfg.Logger = inv.log
	srv, err := logd.New(cfg)
	if err != nil {
		return configError(err, nil)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		srv.Close()
		return err
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	fmt.Fprintf(inv.err, "logd listening on %s (Kafka protocol), data in %s, fsync %s\n", ln.Addr(), cfg.Storage.Dir, *fsync)
	if authNote != "" {
		fmt.Fprintln(inv.err, authNote)
	}
	var hs *http.Server
	if *httpAddr != "" {
		hln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			ln.Close()
			srv.Close()
			return err
		}
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
