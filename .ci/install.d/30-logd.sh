#!/usr/bin/env bash
# Peers of logd's interoperability tests, from Debian: kcat (librdkafka)
# and python3-kafka (kafka-python 2.0.2; tests run it with
# /usr/bin/python3 -I). Detected with dpkg, never by something the
# repository could satisfy.
set -euo pipefail
if ! dpkg -s kcat >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null
fi
kcat -V | head -1
if ! dpkg -s python3-kafka >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-kafka >/dev/null
fi
/usr/bin/python3 -I -c 'import kafka, sys; sys.stdout.write("python3-kafka " + kafka.__version__ + "\n")'
