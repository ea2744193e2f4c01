//go:build !linux

package multicast

import "net"

// Without Linux there is no UDP GSO or GRO (see offload_linux.go).

const (
	gsoMaxSegments = 1
	gsoMaxBytes    = maxDatagram
	groBuffer      = maxDatagram
	groOOB         = 0
)

func gsoAvailable() bool          { return false }
func enableGRO(*net.UDPConn) bool { return false }
func segmentCmsg(int) []byte      { return nil }
func groSegment([]byte) int       { return 0 }
func putSegment([]byte, int)      {}
func gsoRefused(error) bool       { return true }
