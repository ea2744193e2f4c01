package logd

import "github.com/brokerless/brokerless/logd/storage"

// Fenced returns the partitions that refuse writes because a write or
// fsync to their files failed (a full disk): each answers every produce
// at once with KAFKA_STORAGE_ERROR until the store's maintenance
// unfences it, once the disk takes writes again (see
// storage.Log.Unfence). None when every partition takes writes; a
// health check reports not-ready while it is not empty.
func (s *Server) Fenced() []storage.TopicPartition { return s.store.Fenced() }
