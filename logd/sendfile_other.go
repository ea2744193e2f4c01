//go:build !linux

package logd

import (
	"net"

	"github.com/brokerless/brokerless/logd/storage"
)

// sendfileTo returns nil: record sets are written from memory.
func sendfileTo(net.Conn) func(storage.Region) error { return nil }
