package logd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
	offsets     *groupOffsets // the coordinator's offset store
	ids         *producerIDs
	topicsAdded notifier // woken when a topic is created
	metrics     *metrics
	reqMem      *byteBudget // request memory of all connections' frames
	// decodeMem is the request memory their decoding and answering may
	// take (decodeCharge): a budget of its own, so that a complete frame
	// never waits for its charge behind frames that wait for it.
	decodeMem *byteBudget
	bufs      bufPool // connections' buffers between requests
	warnings  connWarnings
	auth      serverAuth
	// noZeroCopy makes fetches read every record set and write it
	// from memory, as on a socket that cannot send from files (tests
	// compare the two ways).
	noZeroCopy atomic.Bool
	// fetchFiles counts the segment descriptors Fetch answers hold.
	fetchFiles atomic.Int64
	// copied counts the record bytes Fetch answers hold in memory.
	copied *copiedBytes

	lock *dirLock // on the data directory, until Close

	mu            sync.Mutex
	ln            net.Listener
	conns         map[net.Conn]struct{}
	perIP         map[string]int // open connections by client IP
	lastRefused   time.Time      // when MaxConnections last refused a client
	lastStarved   time.Time      // when a request last timed out waiting for memory
	lastAcceptErr time.Time      // when Accept last failed, and how
	acceptErr     string
	closed        bool
	host          string
	port          int32
	cluster       string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New locks the data directory, opens the store (running crash
// recovery) and prepares the server; Serve starts answering clients. A
// directory another Server holds, in this process or another, gives a
// *DirLockedError.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, conns: map[net.Conn]struct{}{}, perIP: map[string]int{}, metrics: newMetrics(), reqMem: newByteBudget(int64(cfg.MaxInFlightRequestBytes)), decodeMem: newByteBudget(int64(cfg.MaxInFlightRequestBytes)), copied: &copiedBytes{limit: int64(cfg.MaxCopiedFetchBytes)}}
	if err := s.auth.setup(cfg); err != nil {
		return nil, err
	}
	s.offsets = &groupOffsets{srv: s}
	s.cfg.Storage.Hooks = append(s.cfg.Storage.Hooks, s.metrics, s.offsets)
	lock, err := lockDir(s.cfg.Storage.FS, s.cfg.Storage.Dir)
	if err != nil {
		return nil, err
	}
	if err := s.auth.keepDecoySecret(s.cfg); err != nil {
		lock.unlock()
		return nil, err
	}
	if err := s.open(); err != nil {
		lock.unlock()
		return nil, err
	}
	s.lock = lock
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.groups.Run(s.ctx) }()
	return s, nil
}

// open opens the store, the producer ids, the cluster id and the group
// coordinator.
func (s *Server) open() error {
	cfg := &s.cfg
	store, err := storage.Open(cfg.Storage)
	if err != nil {
		return nestConfigError("Storage.", err)
	}
	s.store = store
	if s.ids, err = openProducerIDs(cfg.Storage.Dir); err != nil {
		store.Close()
		return err
	}
	if s.cluster, err = clusterID(cfg.Storage.Dir); err != nil {
		store.Close()
		return err
	}
	s.offsets.s = store.Offsets()
	s.groups, err = groups.New(groups.Config{
		Offsets:             s.offsets,
		PartitionExists:     s.partitionExists,
		MinSessionTimeout:   cfg.MinSessionTimeout,
		MaxSessionTimeout:   cfg.MaxSessionTimeout,
		MaxRebalanceTimeout: cfg.MaxRebalanceTimeout,
		MaxRetainedBytes:    cfg.MaxGroupBytes,
		MaxOffsetMetadata:   cfg.Storage.MaxOffsetMetadata,
		Now:                 cfg.Now,
		Logger:              cfg.Logger,
	})
	if err != nil {
		store.Close()
		return err
	}
	// Offsets expire only once their group has no members.
	s.offsets.coord.Store(s.groups)
	store.Offsets().SetActive(s.groups.ActiveGroups)
	return nil
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
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrClosed
			}
			if !acceptRetryable(err) {
				return fmt.Errorf("logd: accept: %w", err)
			}
			// Out of file descriptors or memory: refuse (the kernel keeps
			// the connections queued) and retry, backing off as net/http
			// does, rather than stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.acceptFailed(err)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return ErrClosed
			}
			continue
		}
		backoff = 0
		accepted := time.Now()
		ip := remoteIP(c)
		if err := s.track(c, ip); err != nil {
			if !errors.Is(err, ErrClosed) {
				s.warn(&s.warnings.refused, "logd: connection refused", "remote", c.RemoteAddr(), "reason", err)
			}
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c, ip)
			s.serveConn(c, ip, accepted)
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

// Why a connection is refused.
var (
	errTooManyConns  = errors.New("MaxConnections reached")
	errTooManyFromIP = errors.New("MaxConnectionsPerIP reached for its address")
)

// track admits a connection from ip, or says why not (and counts it).
func (s *Server) track(c net.Conn, ip string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case len(s.conns) >= s.cfg.MaxConnections:
		s.lastRefused = s.cfg.Now()
		s.metrics.refused.Add(1)
		return errTooManyConns
	case s.perIP[ip] >= s.cfg.MaxConnectionsPerIP:
		s.metrics.refusedPerIP.Add(1)
		return errTooManyFromIP
	}
	s.conns[c] = struct{}{}
	s.perIP[ip]++
	s.metrics.connections.Add(1)
	return nil
}

func (s *Server) untrack(c net.Conn, ip string) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perIP[ip]--; s.perIP[ip] <= 0 {
		delete(s.perIP, ip)
	}
	s.mu.Unlock()
	s.metrics.connections.Add(-1)
}

// acceptRetryable reports whether an Accept error passes: a timeout, a
// connection aborted before it was accepted, or a lack of file
// descriptors or memory.
func acceptRetryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// acceptFailed counts and records a failed Accept: clients are being
// refused.
func (s *Server) acceptFailed(err error) {
	s.metrics.acceptErrors.Add(1)
	s.mu.Lock()
	s.lastAcceptErr, s.acceptErr = s.cfg.Now(), err.Error()
	s.mu.Unlock()
	s.warn(&s.warnings.refused, "logd: accepting connections failed", "err", err)
}

// remoteIP is the address a connection comes from, without its port.
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
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
	err := s.store.Close()
	if uerr := s.lock.unlock(); err == nil {
		err = uerr
	}
	return err
}
