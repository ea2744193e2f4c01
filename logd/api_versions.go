package logd

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersions lists what the server speaks. A client asking with a
// version we do not know gets a v0 body with UNSUPPORTED_VERSION and the
// full list, so it can retry with one we do (KIP-511). The response
// header is always v0 (appendResponse adds no tag byte for it).
func (s *Server) apiVersions(req *request) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	version := req.version
	if req.body == nil || !supports(req.key, req.version) {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		version = 0
	}
	keys := make([]kmsg.Key, 0, len(supported))
	for k := range supported {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r := supported[k]
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.Int16(), MinVersion: r.min, MaxVersion: r.max})
	}
	resp.SetVersion(version)
	return resp
}
