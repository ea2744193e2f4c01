package logd

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiLog records the API key and version of every request a test
// server reads, taken from the bytes on the wire, so that an interop
// test can log which versions a client used. Wrap a listener with it
// through serveTest.
type apiLog struct {
	mu   sync.Mutex
	seen map[[2]int16]int // (key, version) → requests
}

func newAPILog() *apiLog { return &apiLog{seen: map[[2]int16]int{}} }

func (l *apiLog) wrap(ln net.Listener) net.Listener { return sniffListener{ln, l} }

func (l *apiLog) add(key, version int16) {
	l.mu.Lock()
	l.seen[[2]int16{key, version}]++
	l.mu.Unlock()
}

// String lists "Name vN×count" per key and version, by key.
func (l *apiLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([][2]int16, 0, len(l.seen))
	for k := range l.seen {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int16) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s v%d×%d", kmsg.NameForKey(k[0]), k[1], l.seen[k]))
	}
	return strings.Join(parts, ", ")
}

// report logs the versions seen so far.
func (l *apiLog) report(t *testing.T, client string) {
	t.Helper()
	t.Logf("%s used: %s", client, l)
}

// versions returns the versions of key seen, ascending.
func (l *apiLog) versions(key kmsg.Key) []int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var vs []int16
	for k := range l.seen {
		if k[0] == key.Int16() {
			vs = append(vs, k[1])
		}
	}
	slices.Sort(vs)
	return vs
}

type sniffListener struct {
	net.Listener
	log *apiLog
}

func (s sniffListener) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, log: s.log}, nil
}

// sniffConn parses the request frames it reads: a 4-byte size, then
// the header's API key and version. The server reads a connection from
// one goroutine at a time.
type sniffConn struct {
	net.Conn
	log  *apiLog
	head []byte // the current frame's first bytes, up to 8
	skip int64  // the current frame's bytes still to pass over
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	b := p[:n]
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(int64(len(b)), c.skip)
			b, c.skip = b[k:], c.skip-k
			continue
		}
		k := min(len(b), 8-len(c.head))
		c.head, b = append(c.head, b[:k]...), b[k:]
		if len(c.head) == 8 {
			size := int64(binary.BigEndian.Uint32(c.head))
			c.log.add(int16(binary.BigEndian.Uint16(c.head[4:])), int16(binary.BigEndian.Uint16(c.head[6:])))
			c.skip, c.head = size-4, c.head[:0]
		}
	}
	return n, err
}
