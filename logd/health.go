package logd

import (
	"fmt"
	"strings"
	"time"
)

// notReadyFor is how long /healthz keeps reporting a refused client or
// a request starved of memory.
const notReadyFor = 5 * time.Second

// notReady returns why the server cannot serve every client now; none
// means ready. Clients refused for MaxConnections or because Accept
// failed (out of file descriptors), or requests closed for want of
// request memory, within notReadyFor, and fenced partitions each make it
// not ready. Refusals for MaxConnectionsPerIP do not: they
// keep one address from taking every connection, so that the others are
// served.
func (s *Server) notReady() []string {
	now := s.cfg.Now()
	var why []string
	s.mu.Lock()
	closed, refused, starved := s.closed, s.lastRefused, s.lastStarved
	acceptFailed, acceptErr := s.lastAcceptErr, s.acceptErr
	s.mu.Unlock()
	if closed {
		return []string{"closed"}
	}
	if !refused.IsZero() && now.Sub(refused) < notReadyFor {
		why = append(why, fmt.Sprintf("refusing connections: MaxConnections (%d) reached %v ago", s.cfg.MaxConnections, now.Sub(refused).Round(time.Millisecond)))
	}
	if !acceptFailed.IsZero() && now.Sub(acceptFailed) < notReadyFor {
		why = append(why, fmt.Sprintf("accepting connections failed %v ago: %s", now.Sub(acceptFailed).Round(time.Millisecond), acceptErr))
	}
	if !starved.IsZero() && now.Sub(starved) < notReadyFor {
		why = append(why, fmt.Sprintf("request memory exhausted: a request waited %v without it %v ago", s.cfg.RequestTimeout, now.Sub(starved).Round(time.Millisecond)))
	}
	if fenced := s.Fenced(); len(fenced) > 0 {
		parts := make([]string, len(fenced))
		for i, tp := range fenced {
			parts[i] = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
		}
		why = append(why, "partitions fenced after a storage error: "+strings.Join(parts, ", "))
	}
	return why
}

// starved records that a request was closed for want of request memory.
func (s *Server) starved() {
	s.mu.Lock()
	s.lastStarved = s.cfg.Now()
	s.mu.Unlock()
}
