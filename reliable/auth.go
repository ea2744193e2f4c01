package reliable

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"time"
)

// Authentication (doc.go, "Authentication tag"): with a shared key every
// datagram carries a trailer of salt, counter and tag. The tag is
// AES-128-GMAC (AES-GCM sealing nothing, the datagram being the
// additional data) under a subkey derived from the key and the sender's
// salt, with the counter as nonce.
//
// Why GMAC rather than HMAC-SHA256: with AES-NI and carry-less multiply
// it costs about a quarter of HMAC-SHA256 per datagram on this machine
// class (BenchmarkTag, 1,372 bytes: 0.28–0.48 µs to seal or to check
// against 1.35–1.46 µs), and the tag is computed for every datagram sent
// and checked for every one received, next to the kernel's few µs.
// GMAC's catch is that a nonce used twice under one key gives the key
// away. Hence the subkey per sender: each Sender and Receiver draws a
// 96-bit salt from crypto/rand when it starts (never from Config.Rand,
// which tests seed) and numbers its datagrams from 0, so a (subkey,
// nonce) pair is never used twice. Both are in the standard library;
// golang.org/x/crypto, which has faster hash MACs, is not a dependency.
const (
	saltLen    = 12
	counterLen = 8
	tagLen     = 16
	// TrailerLen is what the authentication trailer adds to a datagram.
	TrailerLen = saltLen + counterLen + tagLen
	// MinKeyLen is the shortest key accepted.
	MinKeyLen = 16
	// authFlag, in the version byte, marks a datagram with a trailer.
	authFlag = 0x80
)

// subkeyLabel separates the subkey derivation from any other use of
// the key.
const subkeyLabel = "brokerless reliable v1 GMAC subkey"

// Subkeys derived for senders not seen before are rate-limited: each
// costs an HMAC, a key schedule and 1.3 KB of allocations (1.2 to 2.1 µs
// on a loaded machine, where checking a tag under a known subkey costs
// 0.1 µs), and a flood of forged salts must not buy them without limit.
//
// Nothing tells a forged salt from a new sender's before the derivation
// (the salt is random, the tag needs the subkey), so while forged new
// salts come faster than the budget, a new sender's datagram finds it
// empty with the probability they outrun it by, and is refused (errBusy)
// until one of its next datagrams finds a token; senders already
// verified are not affected. The budget was 1,000 a second: a flood of
// 2,000 forged STATUS a second (160 KB/s) from anyone who can reach the
// publisher, no key needed, refused half of a new receiver's STATUS and
// NACKs, one of 100,000 a second all but 1% of them, for as long as it
// lasted (TestForgedFloodNewReceiver); so did forged DATA to a
// Receiver, for a new publisher. 20,000 a second costs at most about 5%
// of a core: a flood must outrun that, 1.6 MB/s of STATUS, to refuse
// anything, and send 1,000,000 a second (80 MB/s) to keep a new
// receiver, which sends a STATUS every 20 ms, out for a second on
// average. The burst lets 1,000 receivers start at once.
const (
	derivationsPerSecond = 20000
	derivationBurst      = 1000
)

// newSubkeyMAC returns the HMAC that derives key's subkeys. An opener
// keeps one: Reset takes it back to the key's state, saving the key's
// pads and most of the allocations of each derivation.
func newSubkeyMAC(key []byte) hash.Hash { return hmac.New(sha256.New, key) }

// deriveAEAD derives the subkey of salt with m (newSubkeyMAC).
func deriveAEAD(m hash.Hash, salt []byte) cipher.AEAD {
	m.Reset()
	m.Write([]byte(subkeyLabel))
	m.Write(salt)
	var sum [sha256.Size]byte
	block, err := aes.NewCipher(m.Sum(sum[:0])[:16])
	if err != nil {
		panic(err) // 16 bytes is a valid AES key
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // AES has a 16-byte block
	}
	return aead
}

// sealer appends trailers with its own salt and counter.
type sealer struct {
	aead  cipher.AEAD
	salt  [saltLen]byte
	nonce [12]byte
	count uint64
}

func newSealer(key []byte) *sealer {
	s := &sealer{}
	rand.Read(s.salt[:])
	s.aead = deriveAEAD(newSubkeyMAC(key), s.salt[:])
	return s
}

// seal flags the datagram b[:n] as authenticated and writes its trailer
// after it; b must have room for it. It returns the new length.
func (s *sealer) seal(b []byte, n int) int {
	b[2] |= authFlag
	t := b[n : n+TrailerLen]
	copy(t, s.salt[:])
	binary.BigEndian.PutUint64(t[saltLen:], s.count)
	binary.BigEndian.PutUint64(s.nonce[4:], s.count)
	s.count++
	s.aead.Seal(t[saltLen+counterLen:saltLen+counterLen], s.nonce[:], nil, b[:n+saltLen+counterLen])
	return n + TrailerLen
}

// opener checks trailers. It keeps the subkeys of the senders it has
// verified, a bounded number, and derives others within a budget.
//
// A Sender's opener also drops replays (antiReplay): a receiver's NACKs
// and STATUS are few and unicast, and a STATUS replayed after its
// receiver went would keep the publisher waiting for it. A Receiver's
// does not: replayed DATA moves nothing (doc.go), and a repair
// multicast late behind many datagrams must not be taken for one.
type opener struct {
	mac        hash.Hash // derives subkeys: newSubkeyMAC
	keys       []openKey
	index      map[[saltLen]byte]int // salt → its slot in keys
	next       int                   // slot the next new subkey replaces when full
	budget     tokenBucket
	nonce      [12]byte
	antiReplay bool
}

type openKey struct {
	salt [saltLen]byte
	aead cipher.AEAD
	// The counters taken from this sender: top, the highest, and bit i
	// of seen set when top-i was taken (IPsec's sliding window, RFC
	// 4303 3.4.3, of 64 counters): one more than 63 below top, or
	// taken already, is a replay. Its sender numbers its datagrams in
	// the order it sends them, so only reordering on the way brings
	// one below top.
	top  uint64
	seen uint64
}

// replayWindow is how far below the highest counter taken from a
// sender a datagram may be and still be taken, once.
const replayWindow = 64

// fresh records the counter c, reporting false when it was taken
// already or is too old to tell.
func (k *openKey) fresh(c uint64) bool {
	switch {
	case c > k.top:
		if d := c - k.top; d < replayWindow {
			k.seen <<= d
		} else {
			k.seen = 0
		}
		k.top, k.seen = c, k.seen|1
		return true
	case k.top-c >= replayWindow || k.seen&(1<<(k.top-c)) != 0:
		return false
	}
	k.seen |= 1 << (k.top - c)
	return true
}

func newOpener(key []byte, size int, now time.Time) *opener {
	return &opener{
		mac:    newSubkeyMAC(key),
		keys:   make([]openKey, 0, size),
		index:  make(map[[saltLen]byte]int),
		budget: newTokenBucket(derivationsPerSecond, derivationBurst, now),
	}
}

var (
	errNoTag   = &DecodeError{ErrUnauthenticated, "no authentication tag"}
	errBadTag  = &DecodeError{ErrUnauthenticated, "authentication tag does not match"}
	errBusy    = &DecodeError{ErrUnauthenticated, "too many new senders to check at once"}
	errNeedKey = &DecodeError{ErrForeign, "authenticated datagram and no key"}
	errReplay  = &DecodeError{ErrUnauthenticated, "authentication counter taken already: a replay"}
)

// header checks b's authentication trailer when there is a key (o is
// not nil) and returns b without it, and b's header. Without a key, an
// authenticated datagram is foreign. Errors wrap ErrUnauthenticated,
// ErrForeign or ErrMalformed.
func (o *opener) header(now time.Time, b []byte) ([]byte, Header, error) {
	if o != nil {
		var err error
		if b, err = o.open(now, b); err != nil {
			return nil, Header{}, err
		}
	}
	h, err := ParseHeader(b)
	if err == nil && h.Tagged && o == nil {
		err = errNeedKey
	}
	return b, h, err
}

// open checks the trailer of b and returns b without it.
func (o *opener) open(now time.Time, b []byte) ([]byte, error) {
	if len(b) < headerLen+TrailerLen || b[2]&authFlag == 0 {
		return nil, errNoTag
	}
	n := len(b) - TrailerLen
	t := b[n:]
	var salt [saltLen]byte
	copy(salt[:], t)
	i := o.lookup(&salt)
	known := i >= 0
	var aead cipher.AEAD
	if known {
		aead = o.keys[i].aead
	} else {
		if !o.budget.take(now, 1) {
			return nil, errBusy
		}
		aead = deriveAEAD(o.mac, salt[:])
	}
	copy(o.nonce[4:], t[saltLen:saltLen+counterLen])
	if _, err := aead.Open(nil, o.nonce[:], t[saltLen+counterLen:], b[:n+saltLen+counterLen]); err != nil {
		return nil, errBadTag
	}
	c := binary.BigEndian.Uint64(t[saltLen:])
	switch {
	case !known:
		o.remember(openKey{salt: salt, aead: aead, top: c, seen: 1})
	case o.antiReplay && !o.keys[i].fresh(c):
		return nil, errReplay
	}
	return b[:n], nil
}

// lookup returns the index of salt's subkey, -1 if not known.
func (o *opener) lookup(salt *[saltLen]byte) int {
	if i, ok := o.index[*salt]; ok {
		return i
	}
	return -1
}

func (o *opener) remember(k openKey) {
	if len(o.keys) < cap(o.keys) {
		o.index[k.salt] = len(o.keys)
		o.keys = append(o.keys, k)
		return
	}
	delete(o.index, o.keys[o.next].salt)
	o.keys[o.next] = k
	o.index[k.salt] = o.next
	o.next = (o.next + 1) % len(o.keys)
}
