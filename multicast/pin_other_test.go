//go:build !linux

package multicast

import "errors"

func pinProcess(int) error {
	return errors.New("pinning threads to a CPU is implemented on Linux only")
}
