#!/usr/bin/env bash
# Peer of the webhook interoperability tests (package webhook): the
# official Standard Webhooks JavaScript library, npm standardwebhooks
# 1.1.1, under $BROKERLESS_PEERS/webhook (tests run a node script that
# requires it from there). Needs node and npm (10-node.sh).
# Idempotent: skipped when the package's own package.json is there.
set -euo pipefail

peers="${BROKERLESS_PEERS:?BROKERLESS_PEERS must name the peers folder}"

if [ ! -f "$peers/webhook/node_modules/standardwebhooks/package.json" ]; then
  mkdir -p "$peers/webhook"
  npm install --no-audit --no-fund --prefix "$peers/webhook" standardwebhooks@1.1.1
fi
node -e 'process.stdout.write("standardwebhooks " + require(process.argv[1] + "/package.json").version + "\n")' "$peers/webhook/node_modules/standardwebhooks"
