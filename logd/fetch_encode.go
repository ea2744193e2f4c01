package logd

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// hole is a partition's record set, left out of an encoded Fetch
// response and written in its place by the connection's writer: bytes
// read for it (data), or a checked region of a segment file, sent
// without a copy (file).
type hole struct {
	at   int // position in the encoded response where it goes
	data []byte
	file storage.Region
}

func (h *hole) len() int {
	if h.file.File != nil {
		return h.file.Len
	}
	return len(h.data)
}

// appendFetchResponse appends the frame of a Fetch response (size,
// correlation id, header tags when flexible, body) with every non-null
// partition record set left out: holes, appended to holes in order, say
// where each goes; the size field counts them. regions holds, for the
// first len(regions) partitions of the response in order, the file
// region to send as that partition's records (File nil: its
// RecordBatches). The bytes, once the holes are filled, are what
// kmsg's encoding gives for the versions logd supports (4 to 12) and
// the fields logd sets (no partition or response tagged fields), which
// TestFetchEncodingMatchesKmsg checks for every version.
func appendFetchResponse(dst []byte, correlation int32, resp *kmsg.FetchResponse, regions []storage.Region, holes []hole) ([]byte, []hole) {
	v := resp.Version
	flex := v >= 12
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlation))
	if flex {
		dst = append(dst, 0) // header tags
	}
	if v >= 1 {
		dst = kbin.AppendInt32(dst, resp.ThrottleMillis)
	}
	if v >= 7 {
		dst = kbin.AppendInt16(dst, resp.ErrorCode)
		dst = kbin.AppendInt32(dst, resp.SessionID)
	}
	holed, k := 0, 0
	dst = appendArrayLen(dst, len(resp.Topics), flex)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if flex {
			dst = kbin.AppendCompactString(dst, t.Topic)
		} else {
			dst = kbin.AppendString(dst, t.Topic)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flex)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if v >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if v >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if v >= 4 {
				switch {
				case p.AbortedTransactions == nil && flex:
					dst = kbin.AppendUvarint(dst, 0)
				case p.AbortedTransactions == nil:
					dst = kbin.AppendInt32(dst, -1)
				default:
					dst = appendArrayLen(dst, len(p.AbortedTransactions), flex)
				}
				for _, a := range p.AbortedTransactions {
					dst = kbin.AppendInt64(dst, a.ProducerID)
					dst = kbin.AppendInt64(dst, a.FirstOffset)
					if flex {
						dst = kbin.AppendUvarint(dst, 0)
					}
				}
			}
			if v >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			h := hole{data: p.RecordBatches}
			if k < len(regions) {
				h.file = regions[k]
			}
			k++
			switch {
			case h.file.File == nil && p.RecordBatches == nil && flex:
				dst = kbin.AppendUvarint(dst, 0)
			case h.file.File == nil && p.RecordBatches == nil:
				dst = kbin.AppendInt32(dst, -1)
			default:
				n := h.len()
				if flex {
					dst = kbin.AppendUvarint(dst, uint32(n+1))
				} else {
					dst = kbin.AppendInt32(dst, int32(n))
				}
				if n > 0 {
					h.at = len(dst)
					holes = append(holes, h)
					holed += n
				}
			}
			if flex {
				dst = kbin.AppendUvarint(dst, 0) // partition tags
			}
		}
		if flex {
			dst = kbin.AppendUvarint(dst, 0) // topic tags
		}
	}
	if flex {
		dst = kbin.AppendUvarint(dst, 0) // response tags
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4+holed))
	return dst, holes
}

func appendArrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}
