package logd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/brokerless/brokerless/logd/groups"
	"github.com/brokerless/brokerless/logd/storage"
)

// nodeID is this broker's id: the only node of its cluster.
const nodeID = 0

// Server is a running log daemon: a store, a group coordinator and the
// Kafka-protocol listener.
type Server struct {
	cfg         Config
	store       *storage.Store
	groups      *groups.Coordinator
	ids         *producerIDs
	topicsAdded notifier // woken when a topic is created
	metrics     *metrics
	auth        serverAuth

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]struct{}
	closed  bool
	host    string
	port    int32
	cluster string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New opens the store (running crash recovery) and prepares the server;
// Serve starts answering clients.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, conns: map[net.Conn]struct{}{}, metrics: newMetrics()}
	if err := s.auth.setup(cfg); err != nil {
		return nil, err
	}
	s.cfg.Storage.Hooks = append(s.cfg.Storage.Hooks, s.metrics)
	store, err := storage.Open(s.cfg.Storage)
	if err != nil {
		return nil, err
	}
	s.store = store
	if s.ids, err = openProducerIDs(cfg.Storage.Dir); err != nil {
		store.Close()
		return nil, err
	}
	if s.cluster, err = clusterID(cfg.Storage.Dir); err != nil {
		store.Close()
		return nil, err
	}
	s.groups, err = groups.New(groups.Config{
		Offsets:           groupOffsets{store.Offsets()},
		PartitionExists:   s.partitionExists,
		MinSessionTimeout: cfg.MinSessionTimeout,
		MaxSessionTimeout: cfg.MaxSessionTimeout,
		Now:               cfg.Now,
		Logger:            cfg.Logger,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.groups.Run(s.ctx) }()
	return s, nil
}

// Serve accepts Kafka clients on ln until Close. It returns ErrClosed
// after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.ln = ln
	s.host, s.port = s.advertised(ln.Addr())
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("logd: accept: %w", err)
		}
		if !s.track(c) {
			s.metrics.refused.Add(1)
			s.cfg.Logger.Warn("logd: connection refused: too many connections", "remote", c.RemoteAddr(), "max", s.cfg.MaxConnections)
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

// Addr is the address Serve listens on, once it has started.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// advertised is the host and port Metadata names for this broker.
func (s *Server) advertised(addr net.Addr) (string, int32) {
	host, port := s.cfg.AdvertisedHost, s.cfg.AdvertisedPort
	if h, p, err := net.SplitHostPort(addr.String()); err == nil {
		if host == "" {
			host = h
		}
		if port == 0 {
			n, _ := strconv.Atoi(p)
			port = int32(n)
		}
	}
	return host, port
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns) >= s.cfg.MaxConnections {
		return false
	}
	s.conns[c] = struct{}{}
	s.metrics.connections.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.metrics.connections.Add(-1)
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops accepting, closes every connection, waits for handlers to
// return, and closes the store (which syncs it).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.topicsAdded.wake()
	s.wg.Wait()
	return s.store.Close()
}
