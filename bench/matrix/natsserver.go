package matrix

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsServers are embedded NATS servers (github.com/nats-io/nats-server),
// started on first use on a free loopback port: one without JetStream,
// and JetStream ones with file storage, fsyncing every write or not.
type natsServers struct {
	mu  sync.Mutex
	srv map[string]*natsServer
}

type natsServer struct {
	s   *server.Server
	dir string
}

// get returns the server of kind "core", "js-fsync" or "js".
func (n *natsServers) get(kind string) (*server.Server, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s := n.srv[kind]; s != nil {
		return s.s, nil
	}
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true, HTTPPort: -1}
	var dir string
	if kind != "core" {
		var err error
		if dir, err = os.MkdirTemp("", "bench-jetstream-"); err != nil {
			return nil, err
		}
		opts.JetStream, opts.StoreDir = true, dir
		// SyncAlways: fsync after each write before acknowledging, as
		// logd's FsyncAlways; otherwise JetStream's default, an fsync
		// every 2 minutes.
		opts.SyncAlways = kind == "js-fsync"
	}
	s, err := server.NewServer(opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nats-server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nats-server: not ready in 10s")
	}
	if n.srv == nil {
		n.srv = map[string]*natsServer{}
	}
	n.srv[kind] = &natsServer{s: s, dir: dir}
	return s, nil
}

func (n *natsServers) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.srv {
		s.s.Shutdown()
		s.s.WaitForShutdown()
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	}
	n.srv = nil
	return nil
}
