package zmq

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestIpcBindOverStaleSocket: binding an ipc:// endpoint whose socket
// file a killed process left behind removes it and binds, as libzmq
// does; a socket file something listens on, or a file that is not a
// socket, is left alone and the bind fails.
func TestIpcBindOverStaleSocket(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	p, err := NewPublisher(t.Context(), Config{Bind: []string{"ipc://" + stale}})
	if err != nil {
		t.Fatalf("bind over a stale socket file: %v", err)
	}
	p.Close()

	live := filepath.Join(dir, "live.sock")
	ll, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{live, regular} {
		if p, err := NewPublisher(t.Context(), Config{Bind: []string{"ipc://" + path}}); err == nil {
			p.Close()
			t.Errorf("bound over %s", path)
		}
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s removed: %v", path, err)
		}
	}
	if c, err := net.Dial("unix", live); err != nil {
		t.Errorf("the live socket no longer answers: %v", err)
	} else {
		c.Close()
	}
}
