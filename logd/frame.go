package logd

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// request is one decoded Kafka request.
type request struct {
	key, version int16
	correlation  int32
	clientID     string
	body         kmsg.Request
}

// Frame errors. A request the server cannot decode closes the connection
// (Kafka does the same: the stream cannot be resynchronized), after a log
// line naming the client and the reason.
var (
	errShortHeader = &FrameError{Reason: "request shorter than its header", noHeader: true}
)

// FrameError says why a request frame could not be used.
type FrameError struct {
	Key, Version int16
	Reason       string
	noHeader     bool // refused before its header was read: Key and Version are unknown
}

func (e *FrameError) Error() string {
	if e.noHeader {
		return "logd: " + e.Reason
	}
	return fmt.Sprintf("logd: request key %d (%s) v%d: %s", e.Key, kmsg.NameForKey(e.Key), e.Version, e.Reason)
}

// decodeRequest decodes a request frame (the bytes after the 4-byte
// size): header v1 or v2, then the body with kmsg. Unknown keys and
// versions are not errors here: the request comes back with a nil body
// (unknown key, or a version the server does not speak) or its version
// set (the server answers UNSUPPORTED_VERSION), so the caller can answer
// ApiVersions properly.
func decodeRequest(frame []byte) (*request, error) {
	if len(frame) < 8 {
		return nil, errShortHeader
	}
	r := kbin.Reader{Src: frame}
	req := &request{key: r.Int16(), version: r.Int16(), correlation: r.Int32()}
	if id := r.NullableString(); id != nil {
		req.clientID = *id
	}
	if !r.Ok() {
		return nil, errShortHeader
	}
	body := kmsg.RequestForKey(req.key)
	if body == nil {
		return req, nil
	}
	body.SetVersion(req.version)
	if req.version < 0 || req.version > body.MaxVersion() || !supports(req.key, req.version) && req.key != kmsg.ApiVersions.Int16() {
		// Answered with UNSUPPORTED_VERSION by the caller (ApiVersions)
		// or closed, so not decoded: decodeCharge charges only what
		// the versions we speak allocate.
		return req, nil
	}
	if body.IsFlexible() {
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return nil, &FrameError{Key: req.key, Version: req.version, Reason: "truncated header tags"}
		}
	}
	if err := body.ReadFrom(r.Src); err != nil {
		return nil, &FrameError{Key: req.key, Version: req.version, Reason: err.Error()}
	}
	req.body = body
	return req, nil
}

// appendResponse appends a whole response frame: size, correlation id,
// the header's tag byte for flexible responses (never for ApiVersions,
// whose response header is always v0), then the body.
func appendResponse(dst []byte, correlation int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlation))
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
