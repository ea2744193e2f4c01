// Package peertest finds the outside peers of interoperability tests —
// Debian and npm programs, Python modules of Debian's /usr/bin/python3,
// peers built under $BROKERLESS_PEERS — and applies the project's rule
// when one is missing: the test is skipped with a message naming the
// peer and how to install it, unless BROKERLESS_INTEROP=1, where the
// missing peer fails the test. Every message has one form:
//
//	missing peer: kcat, not found in $PATH; install: apt-get install kcat (.ci/install.d/30-logd.sh); set BROKERLESS_INTEROP=1 to require it
//
// and, under BROKERLESS_INTEROP=1, ends "BROKERLESS_INTEROP=1 requires it".
package peertest
