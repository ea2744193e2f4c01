#!/usr/bin/env bash
# Peers of the ZeroMQ transport (package transport/zmq), from Debian:
#   - python3-zmq (pyzmq on libzmq 4.3): the interoperability tests run it
#     with /usr/bin/python3 -I;
#   - libzmq3-dev: libzmq's headers and library for bench/'s cgo binding
#     (github.com/pebbe/zmq4), the benchmark's libzmq peer, with what cgo
#     needs to build it: gcc (go enables cgo when it finds a C compiler)
#     and pkg-config (pebbe/zmq4 finds libzmq with `#cgo pkg-config`).
# Detected with dpkg, never by something the repository could satisfy.
# .ci/run runs this (install peers) before the bench module's phase.
set -euo pipefail
for pkg in python3-zmq libzmq3-dev gcc pkg-config; do
  if ! dpkg -s "$pkg" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
  fi
done
/usr/bin/python3 -I -c 'import sys, zmq; sys.stdout.write("python3-zmq %s on libzmq %s\n" % (zmq.__version__, zmq.zmq_version()))'
pkg-config --modversion libzmq | sed 's/^/libzmq3-dev /'
