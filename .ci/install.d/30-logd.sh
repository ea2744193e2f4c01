#!/usr/bin/env bash
# Peers of logd's interoperability tests: kcat (librdkafka) from Debian.
# Detected with dpkg, never by something the repository could satisfy.
set -euo pipefail
if ! dpkg -s kcat >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null
fi
kcat -V | head -1
