#!/usr/bin/env bash
# Peer of the webhook console's browser test (package webhook/console):
# Debian's chromium, driven headless by github.com/chromedp/chromedp. The
# test finds it with exec.LookPath("chromium"). Detected with dpkg, never
# by something the repository could satisfy. .ci/run runs apt-get update
# before the install.d scripts; run alone, this script updates the package
# lists only when the install fails for want of them.
set -euo pipefail

if ! dpkg -s chromium >/dev/null 2>&1; then
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
fi
chromium --version
