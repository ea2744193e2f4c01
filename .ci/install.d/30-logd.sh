#!/usr/bin/env bash
# Peers of logd's interoperability tests: kcat (librdkafka) from Debian.
set -euo pipefail
if ! command -v kcat >/dev/null; then
  apt-get install -y -qq kcat >/dev/null
fi
kcat -V | head -1
