#!/usr/bin/env bash
# Peer of the statsd ingest benchmark (package statsd, BenchmarkIngest):
# prometheus statsd_exporter v0.31.0, built from its Go module into
# $BROKERLESS_PEERS/statsd_exporter/v0.31.0/statsd_exporter. Debian has
# no package of it. Idempotent: skipped when the binary is there and
# `go version -m` says it was built from that module version.
set -euo pipefail

peers="${BROKERLESS_PEERS:?BROKERLESS_PEERS must name the peers folder}"
version=v0.31.0
dir="$peers/statsd_exporter/$version"
bin="$dir/statsd_exporter"

if ! { [ -x "$bin" ] && go version -m "$bin" | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/prometheus/statsd_exporter[[:space:]]+$version[[:space:]]"; }; then
  mkdir -p "$dir"
  GOBIN="$dir" GOFLAGS=-mod=mod go install "github.com/prometheus/statsd_exporter@$version"
fi
go version -m "$bin" | grep -E "^[[:space:]]+mod[[:space:]]"

# ss(8), from iproute2, reads the exporter's receive buffer
# (statsd/exporter_test.go); a minimal image may lack it.
if ! dpkg -s iproute2 >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null
fi
