package statsd

import (
	"bytes"
	"strconv"
)

// The sequence line a client puts in each datagram for loss accounting
// (see the package documentation):
//
//	_bl.seq:<client-id>/<seq>|seq
const (
	// SeqLinePrefix starts every sequence line.
	SeqLinePrefix = "_bl.seq:"
	// SeqLineSuffix ends every sequence line: its metric type, unknown to
	// other servers.
	SeqLineSuffix = "|seq"
	// MaxClientIDLen is the longest client id.
	MaxClientIDLen = 64
	// MaxSeqLineLen is the longest sequence line.
	MaxSeqLineLen = len(SeqLinePrefix) + MaxClientIDLen + 1 + 20 + len(SeqLineSuffix)
)

// CheckClientID reports whether id can name a client in a sequence
// line: 1 to MaxClientIDLen bytes of [A-Za-z0-9_.-]. The error wraps
// ErrBadClientID.
func CheckClientID(id string) error {
	if len(id) == 0 || len(id) > MaxClientIDLen {
		return &ClientIDError{ID: id, Reason: "want 1 to 64 bytes"}
	}
	for i := 0; i < len(id); i++ {
		if !clientIDByte(id[i]) {
			return &ClientIDError{ID: id, Reason: "want only letters, digits, '_', '.' and '-'"}
		}
	}
	return nil
}

func clientIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// AppendSeqLine appends the sequence line of datagram seq of client
// clientID to b, without a newline: separate it from the other lines of
// the datagram with '\n' like any line. clientID must pass
// CheckClientID; AppendSeqLine does not check it. It does not allocate
// when b has room.
func AppendSeqLine(b []byte, clientID string, seq uint64) []byte {
	b = append(b, SeqLinePrefix...)
	b = append(b, clientID...)
	b = append(b, '/')
	b = strconv.AppendUint(b, seq, 10)
	return append(b, SeqLineSuffix...)
}

// IsSeqLine reports whether line (without its newline) is meant as a
// sequence line, well formed or not.
func IsSeqLine(line []byte) bool {
	return bytes.HasPrefix(line, []byte(SeqLinePrefix))
}

// ParseSeqLine reads a sequence line (without its newline), as
// AppendSeqLine writes it: seq has no sign and no leading zero. clientID
// points into line. ok is false when line is not a well-formed sequence
// line.
func ParseSeqLine(line []byte) (clientID []byte, seq uint64, ok bool) {
	if !IsSeqLine(line) || !bytes.HasSuffix(line, []byte(SeqLineSuffix)) {
		return nil, 0, false
	}
	body := line[len(SeqLinePrefix) : len(line)-len(SeqLineSuffix)]
	slash := bytes.IndexByte(body, '/')
	if slash < 1 || slash > MaxClientIDLen {
		return nil, 0, false
	}
	clientID = body[:slash]
	for _, c := range clientID {
		if !clientIDByte(c) {
			return nil, 0, false
		}
	}
	digits := body[slash+1:]
	if len(digits) == 0 || len(digits) > 20 || len(digits) > 1 && digits[0] == '0' {
		return nil, 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, 0, false
		}
		d := uint64(c - '0')
		if seq > (1<<64-1-d)/10 {
			return nil, 0, false
		}
		seq = seq*10 + d
	}
	return clientID, seq, true
}
