package logd

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/auth/authtest"
)

// TestUnauthenticatedRequestSizeBounded: before a connection
// authenticates, a request may be at most MaxUnauthenticatedRequestBytes
// (Kafka's sasl.server.max.receive.size). A size header claiming more
// closes the connection at once — before any body byte is read or any
// request memory taken, long before RequestTimeout — and is counted; a
// request of exactly the bound is answered. Once authenticated, a
// client may send requests up to MaxRequestBytes.
func TestUnauthenticatedRequestSizeBounded(t *testing.T) {
	const limit = 4 << 10
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false, func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.MaxUnauthenticatedRequestBytes = limit
		c.RequestTimeout = time.Minute
	})

	// Exactly the bound: an ApiVersions v0 padded to limit bytes.
	c := dialTLS(t, ts, p, nil)
	pad := make([]byte, limit-(2+2+4+2+len("test")))
	if _, err := rawRequest(t, c, kmsg.ApiVersions.Int16(), 0, pad); err != nil {
		t.Fatalf("a request of exactly MaxUnauthenticatedRequestBytes: %v", err)
	}

	// One byte more: closed at the size header, although the body
	// bytes keep coming; nothing waits for RequestTimeout.
	c = dialTLS(t, ts, p, nil)
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, limit+1)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	requireClosed(t, err, "a request larger than MaxUnauthenticatedRequestBytes before authentication")
	if n := ts.auth.oversized.Load(); n != 1 {
		t.Fatalf("oversized unauthenticated requests counted: %d, want 1", n)
	}
	if st := ts.reqMem.stats(); st.used != 0 || st.waits != 0 {
		t.Fatalf("request memory after the refusal: %+v", st)
	}

	// Authenticated, a produce far larger than the bound goes through.
	cl := authClient(t, ts, p, scramSHA256("alice", alicePassword), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders.eu", Value: make([]byte, 64<<10)}).FirstErr(); err != nil {
		t.Fatalf("a 64 KiB produce after authenticating: %v", err)
	}
	if n := ts.auth.oversized.Load(); n != 1 {
		t.Fatalf("oversized unauthenticated requests counted: %d after an authenticated produce, want 1", n)
	}
}

// TestUnauthenticatedConnectionsCannotStarve: connections that never
// authenticate, each announcing the largest request and sending most
// of it, cannot hold the request memory shared with authenticated
// clients: they are closed at their size header, and a user's produce
// is answered at once.
func TestUnauthenticatedConnectionsCannotStarve(t *testing.T) {
	const maxReq = 1 << 20
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false, func(c *Config) {
		c.MaxRequestBytes = maxReq
		c.MaxInFlightRequestBytes = 2 * maxReq
		c.RequestTimeout = time.Minute
	})
	for range 2 {
		c := dialTLS(t, ts, p, nil)
		go c.Write(append(binary.BigEndian.AppendUint32(nil, maxReq), make([]byte, maxReq-16)...))
	}
	waitUntil(t, "both anonymous connections refused", func() bool { return ts.auth.oversized.Load() == 2 })
	cl := authClient(t, ts, p, scramSHA256("alice", alicePassword), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders.eu", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("alice's produce: %v", err)
	}
	if st := ts.reqMem.stats(); st.waits != 0 {
		t.Fatalf("a request waited for memory: %+v", st)
	}
}

// TestCertificateUserNotBoundedAsUnauthenticated: a connection whose
// verified client certificate names a user is authenticated from its
// first request, so MaxUnauthenticatedRequestBytes does not apply.
func TestCertificateUserNotBoundedAsUnauthenticated(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, true, func(c *Config) { c.MaxUnauthenticatedRequestBytes = 1024 })
	carolCert, _, _ := p.Issue(t, "carol", false)
	c := dialTLS(t, ts, p, &carolCert)
	if _, err := rawRequest(t, c, kmsg.ApiVersions.Int16(), 0, make([]byte, 4096)); err != nil {
		t.Fatalf("a 4 KiB request from a certificate user: %v", err)
	}
	if n := ts.auth.oversized.Load(); n != 0 {
		t.Fatalf("oversized unauthenticated requests counted: %d", n)
	}
}

// TestMaxUnauthenticatedRequestBytesDefault: 512 KiB, as Kafka's
// sasl.server.max.receive.size, or MaxRequestBytes when smaller.
func TestMaxUnauthenticatedRequestBytesDefault(t *testing.T) {
	for _, tc := range []struct{ maxReq, want int }{{0, 512 << 10}, {4096, 4096}} {
		ts := startServer(t, t.TempDir(), func(c *Config) { c.MaxRequestBytes = tc.maxReq })
		if got := ts.Server.cfg.MaxUnauthenticatedRequestBytes; got != tc.want {
			t.Errorf("MaxRequestBytes %d: MaxUnauthenticatedRequestBytes defaults to %d, want %d", tc.maxReq, got, tc.want)
		}
	}
}

// TestUnauthenticatedRequestNotDecoded: before a connection
// authenticates, a request other than ApiVersions, SaslHandshake or
// SaslAuthenticate is refused at its header, as Kafka's SASL
// authenticator refuses it, without its body being decoded: decoding
// allocates many times the frame (each element of an array takes at
// least a byte on the wire and tens in memory), which anyone could
// have the server do without credentials. A Metadata request whose
// body does not parse is counted as unauthenticated, not as a request
// that failed to decode.
func TestUnauthenticatedRequestNotDecoded(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	c := dialTLS(t, ts, p, nil)
	_, err := rawRequest(t, c, kmsg.Metadata.Int16(), 9, []byte{0xff, 0xff, 0xff})
	requireClosed(t, err, "an undecodable Metadata request before authentication")
	waitUntil(t, "the refusal counted", func() bool {
		return ts.auth.unauthenticated.Load()+ts.metrics.badFrames.Load() > 0
	})
	if n, bad := ts.auth.unauthenticated.Load(), ts.metrics.badFrames.Load(); n != 1 || bad != 0 {
		t.Fatalf("unauthenticated requests %d, bad frames %d; want 1 and 0 (refused before decoding)", n, bad)
	}
}
