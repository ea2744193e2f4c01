#!/usr/bin/env bash
# Peers of the metrics interoperability tests (issue 11), from Debian:
#   - prometheus 2.42 (the server, started by the tests on a free port,
#     and promtool, which lints the /metrics pages of statsd and logd);
#   - graphite-carbon 1.1.7 (carbon-cache, run in the foreground by the
#     tests) and python3-whisper (whisper-fetch reads its files back).
# --no-install-recommends: prometheus recommends node-exporter and its
# collectors (smartmontools, ipmitool, ...), which no test uses.
# Detected with dpkg, never by something the repository could satisfy.
set -euo pipefail
start=$SECONDS
for pkg in prometheus graphite-carbon python3-whisper; do
  if ! dpkg -s "$pkg" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
  fi
done
# Debian starts the services it installs where it can (not in CI's
# container, which has no init); the tests start their own.
prometheus --version 2>&1 | head -1
promtool --version 2>&1 | head -1
dpkg -s graphite-carbon | grep '^Version'
command -v whisper-fetch
echo "60-metrics: $((SECONDS - start)) s"
