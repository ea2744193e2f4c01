#!/usr/bin/env bash
# Peers of the statsd interoperability tests (package statsd):
#   - Etsy statsd 0.9.0, the reference server, under $BROKERLESS_PEERS/statsd
#     (tests run node_modules/statsd/stats.js with Node);
#   - Debian's python3-statsd, a client from outside the project (tests run
#     it with /usr/bin/python3 -I).
# Idempotent: each step is skipped when its peer is already there. Detection
# never imports a module: run from the repository root, `import statsd`
# finds our own statsd/ folder as a namespace package.
set -euo pipefail

peers="${BROKERLESS_PEERS:?BROKERLESS_PEERS must name the peers folder}"

if [ ! -f "$peers/statsd/node_modules/statsd/stats.js" ]; then
  mkdir -p "$peers/statsd"
  # --omit=optional: the syslog/hashring extras need a compiler and are
  # not used by the tests.
  npm install --no-audit --no-fund --omit=optional --prefix "$peers/statsd" statsd@0.9.0
fi

if ! dpkg -s python3-statsd >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-statsd >/dev/null
fi
/usr/bin/python3 -I -c 'import statsd, sys; sys.stdout.write("python3-statsd at " + statsd.__file__ + "\n")'
