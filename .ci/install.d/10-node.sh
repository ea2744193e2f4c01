#!/usr/bin/env bash
# Node.js and npm, for the npm-installed peers (Etsy statsd). Detected by
# the commands themselves (a repository file cannot stand in for them).
set -euo pipefail
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
node --version
npm --version
