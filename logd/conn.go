package logd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// client is one connection's identity, for handlers that need it, and
// the buffer its fetches read record batches into (reused: a connection
// answers one request at a time).
type client struct {
	id    string // the request header's client id
	host  string
	fetch []byte
	// auth is the connection's authentication state, nil when the
	// server requires none; hangUp closes the connection once the
	// current request is answered (or at once if it has no answer).
	auth   *connAuth
	hangUp bool
}

// serveConn answers one connection's requests, in order, until it
// closes, sends something undecodable, or idles out.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	log := s.cfg.Logger.With("remote", c.RemoteAddr().String())
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	var (
		size  [4]byte
		frame []byte
		out   []byte
		cl    = &client{host: host}
	)
	cl.auth = s.newConnAuth(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		if _, err := io.ReadFull(r, size[:]); err != nil {
			if !errors.Is(err, io.EOF) && !s.isClosed() {
				log.Debug("logd: connection ended", "err", err)
			}
			return
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cl.auth != nil && cl.auth.raw { // a SASL token after SaslHandshake v0
			if !s.rawSASL(cl, c, r, w, n) {
				return
			}
			continue
		}
		if n < 8 || n > s.cfg.MaxRequestBytes {
			s.metrics.badFrames.Add(1)
			log.Warn("logd: closing connection: request size out of bounds", "size", n, "max", s.cfg.MaxRequestBytes)
			return
		}
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			log.Debug("logd: connection ended mid-request", "err", err)
			return
		}
		req, err := decodeRequest(frame)
		if err != nil {
			s.metrics.badFrames.Add(1)
			log.Warn("logd: closing connection: undecodable request", "err", err)
			return
		}
		started := s.cfg.Now()
		cl.id = req.clientID
		resp, err := s.handle(cl, req)
		s.metrics.request(req.key, s.cfg.Now().Sub(started), err != nil)
		if err != nil {
			log.Warn("logd: closing connection", "client", req.clientID, "err", err)
			return
		}
		if resp == nil { // acks=0 produce: no response
			if cl.hangUp {
				return
			}
			continue
		}
		out = appendResponse(out[:0], req.correlation, resp)
		_ = c.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
		_, err = w.Write(out)
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			log.Debug("logd: write failed", "err", err)
			return
		}
		if cl.hangUp {
			return
		}
		frame, out, cl.fetch = keep(frame), keep(out), keep(cl.fetch)
	}
}

// maxKeptBuffer bounds the buffers a connection keeps between requests:
// a rare large request or fetch does not pin its memory to an idle
// connection.
const maxKeptBuffer = 8 << 20

func keep(b []byte) []byte {
	if cap(b) > maxKeptBuffer {
		return nil
	}
	return b[:0]
}

// handle answers one request. An error means the connection must close:
// an unknown API key or an unsupported version (except ApiVersions,
// which always gets an answer so the client can learn what we speak).
func (s *Server) handle(cl *client, req *request) (kmsg.Response, error) {
	if req.key == kmsg.ApiVersions.Int16() {
		return s.apiVersions(req), nil
	}
	if req.body == nil || !supports(req.key, req.version) {
		return nil, &FrameError{req.key, req.version, fmt.Sprintf("unsupported API key or version (supported: %v)", supported[kmsg.Key(req.key)])}
	}
	return s.authorized(cl, req)
}

// dispatch answers one request with its API's handler.
func (s *Server) dispatch(cl *client, req *request) (kmsg.Response, error) {
	var resp kmsg.Response
	switch body := req.body.(type) {
	case *kmsg.ProduceRequest:
		resp = s.produce(body)
	case *kmsg.FetchRequest:
		resp = s.fetch(cl, body)
	case *kmsg.ListOffsetsRequest:
		resp = s.listOffsets(body)
	case *kmsg.MetadataRequest:
		resp = s.metadata(body)
	case *kmsg.OffsetCommitRequest:
		resp = s.groups.OffsetCommit(body)
	case *kmsg.OffsetFetchRequest:
		resp = s.groups.OffsetFetch(body)
	case *kmsg.FindCoordinatorRequest:
		resp = s.findCoordinator(body)
	case *kmsg.JoinGroupRequest:
		resp = s.groups.JoinGroup(s.ctx, body, cl.id, cl.host)
	case *kmsg.HeartbeatRequest:
		resp = s.groups.Heartbeat(body)
	case *kmsg.LeaveGroupRequest:
		resp = s.groups.LeaveGroup(body)
	case *kmsg.SyncGroupRequest:
		resp = s.groups.SyncGroup(s.ctx, body)
	case *kmsg.DescribeGroupsRequest:
		resp = s.groups.DescribeGroups(body)
	case *kmsg.ListGroupsRequest:
		resp = s.groups.ListGroups(body)
	case *kmsg.CreateTopicsRequest:
		resp = s.createTopics(body)
	case *kmsg.DeleteTopicsRequest:
		resp = s.deleteTopics(body)
	case *kmsg.InitProducerIDRequest:
		resp = s.initProducerID(body)
	case *kmsg.DescribeConfigsRequest:
		resp = s.describeConfigs(body)
	case *kmsg.SASLHandshakeRequest:
		resp = s.saslHandshake(cl, body)
	case *kmsg.SASLAuthenticateRequest:
		resp = s.saslAuthenticate(cl, body)
	default:
		return nil, &FrameError{req.key, req.version, "no handler"}
	}
	if resp == nil {
		return nil, nil
	}
	resp.SetVersion(req.version)
	return resp, nil
}
