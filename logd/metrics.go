package logd

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fsyncBuckets are the upper bounds, in seconds, of the fsync latency
// histogram.
var fsyncBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// metrics counts what the server does; /metrics renders it with the
// store's and the coordinator's state. It is also the store's hook for
// fsync and truncation events.
type metrics struct {
	connections     atomic.Int64
	refused         atomic.Uint64 // MaxConnections reached
	refusedPerIP    atomic.Uint64
	idleClosed      atomic.Uint64
	acceptErrors    atomic.Uint64
	badFrames       atomic.Uint64
	slowRequests    atomic.Uint64
	produceErrors   atomic.Uint64
	acksZeroHangUps atomic.Uint64 // connections closed on a failed acks=0 produce
	peerGone        atomic.Uint64 // connections whose client went away while a request waited
	producedBytes   atomic.Uint64
	fetchedBytes    atomic.Uint64
	fetchZeroCopy   atomic.Uint64 // of fetchedBytes, those sent from files (sendfile)
	fetchOutOfRange atomic.Uint64
	// fetchRepeated counts partition mentions folded into an earlier
	// one of the same Fetch; fetchFilesRefused, record sets copied
	// because their answer would have held too many descriptors.
	fetchRepeated     atomic.Uint64
	fetchFilesRefused atomic.Uint64
	// fetchCopiedCut counts partition reads of Fetches shortened or left
	// out because answers held MaxCopiedFetchBytes of record bytes.
	fetchCopiedCut atomic.Uint64
	truncations    atomic.Uint64
	// unwrittenWaits counts requests not handled until the connection's
	// earlier answers were written (connUnwrittenBytes).
	unwrittenWaits atomic.Uint64
	topicsRefused  atomic.Uint64
	// offsetsExpired counts groups whose offsets expired; groupsRefused,
	// commits of new groups refused for Storage.MaxGroups;
	// offsetsOverBudget, commits refused for Storage.MaxOffsetBytes.
	offsetsExpired    atomic.Uint64
	groupsRefused     atomic.Uint64
	offsetsOverBudget atomic.Uint64

	mu       sync.Mutex
	requests map[int16]*apiStats
	fsync    histogram
}

type apiStats struct {
	count, errors uint64
	seconds       float64
}

type histogram struct {
	counts []uint64 // per bucket, then +Inf
	sum    float64
	count  uint64
}

func newMetrics() *metrics {
	return &metrics{requests: map[int16]*apiStats{}, fsync: histogram{counts: make([]uint64, len(fsyncBuckets)+1)}}
}

// request records one answered (or refused) request.
func (m *metrics) request(key int16, took time.Duration, failed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.requests[key]
	if st == nil {
		if kmsg.NameForKey(key) == "Unknown" {
			key = -1 // bounded: every unknown key is counted together
		}
		if st = m.requests[key]; st == nil {
			st = &apiStats{}
			m.requests[key] = st
		}
	}
	st.count++
	st.seconds += took.Seconds()
	if failed {
		st.errors++
	}
}

// OnFsync implements storage.HookFsync.
func (m *metrics) OnFsync(_ string, _ int32, took time.Duration, _ int64) {
	sec := took.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	for i < len(fsyncBuckets) && sec > fsyncBuckets[i] {
		i++
	}
	m.fsync.counts[i]++
	m.fsync.sum += sec
	m.fsync.count++
}

// OnTruncate implements storage.HookTruncate.
func (m *metrics) OnTruncate(string, int32, int64, int64, string) { m.truncations.Add(1) }

// OnGroupOffsetsExpire implements storage.HookGroupOffsetsExpire.
func (m *metrics) OnGroupOffsetsExpire(string, int) { m.offsetsExpired.Add(1) }
