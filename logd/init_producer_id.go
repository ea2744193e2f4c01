package logd

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID gives an idempotent producer a new id at epoch 0. The
// id and epoch a producer may name (KIP-360, v3+) are ignored, as by
// Kafka's coordinator for a request without a transactional id: the
// server cannot tell whether it handed out that id, and a client that
// brought one from another server (Kafka and logd both number producers
// from 0) would otherwise share (id, epoch) with a producer of this one,
// whose batches' sequence numbers would make its own look like
// duplicates, acknowledged and never stored. Transactions are not
// supported: a transactional id is refused.
func (s *Server) initProducerID(req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	id, err := s.ids.allocate()
	if err != nil {
		s.cfg.Logger.Error("logd: cannot reserve producer ids", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
