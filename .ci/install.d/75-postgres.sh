#!/usr/bin/env bash
# Peer of the webhook store tests (package webhook/store and the
# dispatcher's PostgreSQL tests): Debian's PostgreSQL server. The tests
# start their own throwaway cluster with initdb and pg_ctl from
# /usr/lib/postgresql/*/bin (as the postgres user when run as root); no
# cluster of the package's own is used.
set -euo pipefail

if ! dpkg -s postgresql >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
ls /usr/lib/postgresql/*/bin/initdb
