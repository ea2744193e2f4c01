package logd

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/brokerless/brokerless/logd/storage"
)

// clusterID reads the cluster id kept in dir, making one the first time:
// 16 random bytes, base64url as Kafka prints them.
func clusterID(dir string) (string, error) {
	path := filepath.Join(dir, "cluster-id")
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("logd: %w", err)
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	return id, writeFileSync(path, []byte(id+"\n"))
}

// producerIDs hands out idempotent producer ids, unique across restarts:
// the file holds the first id of the next unreserved block, written
// (and synced) before any id of the current block is used.
type producerIDs struct {
	mu    sync.Mutex
	path  string
	next  int64
	limit int64
}

const producerIDBlock = 1000

func openProducerIDs(dir string) (*producerIDs, error) {
	p := &producerIDs{path: filepath.Join(dir, "producer-ids")}
	b, err := os.ReadFile(p.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("logd: %w", err)
	default:
		if p.next, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || p.next < 0 {
			return nil, fmt.Errorf("logd: %s: corrupt producer id block %q", p.path, b)
		}
	}
	p.limit = p.next
	return p, nil
}

// allocate returns a fresh producer id.
func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == p.limit {
		limit := p.next + producerIDBlock
		if err := writeFileSync(p.path, []byte(strconv.FormatInt(limit, 10)+"\n")); err != nil {
			return 0, err
		}
		p.limit = limit
	}
	id := p.next
	p.next++
	return id, nil
}

// writeFileSync replaces path atomically and durably.
func writeFileSync(path string, data []byte) error {
	if err := storage.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("logd: write %s: %w", path, err)
	}
	return nil
}
