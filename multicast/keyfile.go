package multicast

import (
	"fmt"
	"io"
	"os"

	"github.com/brokerless/brokerless/reliable"
)

// maxKeyFile bounds what ReadKeyFile reads.
const maxKeyFile = 4096

// ReadKeyFile reads a shared key (Config.Key) from a file: its bytes,
// as they are, 16 to 4096 of them. Make one with
//
//	head -c 32 /dev/urandom > feed.key
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	key, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	switch {
	case err != nil:
		return nil, err
	case len(key) < reliable.MinKeyLen:
		return nil, fmt.Errorf("a key of %d bytes: want at least %d", len(key), reliable.MinKeyLen)
	case len(key) > maxKeyFile:
		return nil, fmt.Errorf("more than %d bytes: not a key", maxKeyFile)
	}
	return key, nil
}
