package matrix

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/transport"
	_ "github.com/brokerless/brokerless/transport/kafka" // registers logd://
)

// logdOurs is logd, our log daemon, in this process, through logd://
// URLs (acks=all, one partition, each subscriber reading the topic from
// its start). Durable: fsync before acknowledging (FsyncAlways, group
// commit); not: fsync left to the OS (FsyncNever). Each link is a new
// topic.
type logdOurs struct {
	mu      sync.Mutex
	servers map[bool]*logdServer
	topics  atomic.Uint64
}

type logdServer struct {
	srv  *logd.Server
	addr string
	dir  string
}

func (*logdOurs) Name() string     { return "logd" }
func (*logdOurs) Baseline() string { return "raw-tcp" }
func (*logdOurs) Peer() string     { return "jetstream" }

func (*logdOurs) Can(o Options) error {
	if o.Loss > 0 {
		return errTCPLoss
	}
	return nil
}

func (c *logdOurs) server(durable bool) (*logdServer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.servers[durable]; s != nil {
		return s, nil
	}
	dir, err := os.MkdirTemp("", "bench-logd-")
	if err != nil {
		return nil, err
	}
	policy := storage.FsyncNever
	if durable {
		policy = storage.FsyncAlways
	}
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: dir, Fsync: policy}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	go srv.Serve(ln)
	s := &logdServer{srv: srv, addr: ln.Addr().String(), dir: dir}
	if c.servers == nil {
		c.servers = map[bool]*logdServer{}
	}
	c.servers[durable] = s
	return s, nil
}

func (c *logdOurs) Open(ctx context.Context, o Options) (Link, error) {
	s, err := c.server(o.Durable)
	if err != nil {
		return nil, err
	}
	u := fmt.Sprintf("logd://%s/bench-%d", s.addr, c.topics.Add(1))
	subs := make([]string, o.Subscribers)
	for i := range subs {
		subs[i] = u
	}
	// The topic is made by its first record: a subscriber that started
	// before would wait for its metadata to be refreshed (seconds).
	return openURL(ctx, u, subs, true, func(p transport.Publisher) error {
		if err := p.Publish(ctx, transport.Message{Payload: make([]byte, StampSize)}); err != nil {
			return err
		}
		return p.Flush(ctx)
	})
}

// Close stops the servers and removes their logs.
func (c *logdOurs) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.servers {
		s.srv.Close()
		os.RemoveAll(s.dir)
	}
	c.servers = nil
	return nil
}

// Stores: logd has durability on and off.
func (*logdOurs) Stores() bool { return true }
