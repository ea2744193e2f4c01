package logd

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	xscram "github.com/xdg-go/scram"

	"github.com/brokerless/brokerless/logd/auth/authtest"
)

// TestSASLOverTLS: franz-go authenticates with SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN over TLS, then produces (auto-creating the
// topic) and consumes.
func TestSASLOverTLS(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	for i, m := range []sasl.Mechanism{scramSHA256("alice", alicePassword), scramSHA512("alice", alicePassword), plainMech("alice", alicePassword)} {
		t.Run(m.Name(), func(t *testing.T) {
			topic := fmt.Sprintf("orders.%d", i)
			cl := authClient(t, ts, p, m, kgo.AllowAutoTopicCreation())
			produceN(t, cl, topic, m.Name(), 10)
			rd := authClient(t, ts, p, m, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if got := consume(t, rd, 10); string(got[9].Value) != m.Name()+"-9" {
				t.Fatalf("read %q", got[9].Value)
			}
		})
	}
	if n := ts.auth.successes.Load(); n < 3 {
		t.Fatalf("%d successful authentications counted", n)
	}
}

// TestWrongPasswordRefused: a wrong password (SCRAM or PLAIN) and an
// unknown user are refused; the client reports
// SASL_AUTHENTICATION_FAILED, and the refusal is counted.
func TestWrongPasswordRefused(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	for _, m := range []sasl.Mechanism{scramSHA256("alice", "wrong"), scramSHA512("alice", "wrong"), plainMech("alice", "wrong"), scramSHA256("nobody", alicePassword)} {
		cl := authClient(t, ts, p, m)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.Ping(ctx)
		cancel()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: ping returned %v, want SASL_AUTHENTICATION_FAILED", m.Name(), err)
		}
	}
	if ts.auth.failures.Load() < 4 || ts.auth.successes.Load() != 0 {
		t.Fatalf("failures %d, successes %d", ts.auth.failures.Load(), ts.auth.successes.Load())
	}
}

// TestForbiddenTopicRefused: producing to a topic without a produce
// grant fails with TOPIC_AUTHORIZATION_FAILED (whether the topic is
// visible to the user or not), as does fetching without consume; the
// permitted topic in the same request still works.
func TestForbiddenTopicRefused(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	admin := authClient(t, ts, p, scramSHA512("admin", adminPassword))
	createTopic(t, admin, "orders.eu", 1)
	createTopic(t, admin, "audit", 1)
	produceN(t, admin, "audit", "secret", 3)

	alice := authClient(t, ts, p, scramSHA256("alice", alicePassword))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := alice.ProduceSync(ctx, &kgo.Record{Topic: "audit", Value: []byte("x")})
	if err := res.FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice producing to audit: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// reader sees orders.eu (consume) but may not produce to it.
	reader := authClient(t, ts, p, scramSHA256("reader", readerPassword), kgo.DisableIdempotentWrite())
	res = reader.ProduceSync(ctx, &kgo.Record{Topic: "orders.eu", Value: []byte("x")})
	if err := res.FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("reader producing to orders.eu: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// One produce request naming both: the permitted partition is written.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	for _, topic := range []string{"orders.eu", "audit"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = recordBatch([]byte("v"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if codes["orders.eu"] != 0 || codes["audit"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mixed produce answered %v", codes)
	}

	// Fetch: audit refused, orders.eu served, in one request.
	freq := kmsg.NewPtrFetchRequest()
	freq.MaxWaitMillis, freq.MinBytes, freq.MaxBytes = 10000, 1, 1<<20
	for _, topic := range []string{"orders.eu", "audit"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		freq.Topics = append(freq.Topics, rt)
	}
	fresp, err := freq.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range fresp.Topics {
		p := rt.Partitions[0]
		switch rt.Topic {
		case "audit":
			if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.RecordBatches) != 0 {
				t.Fatalf("audit fetched: code %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
			}
		case "orders.eu":
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				t.Fatalf("orders.eu fetch: code %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
			}
		}
	}
	// A fetch of forbidden topics only is answered at once, not after
	// MaxWait.
	freq.Topics = freq.Topics[1:]
	started := time.Now()
	if _, err := freq.RequestWith(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Fatalf("a fetch of only forbidden topics took %v", took)
	}
	// ListOffsets needs a grant on the topic.
	if code := listOffsetsCode(t, alice, "audit"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("ListOffsets audit: error %d", code)
	}
	if ts.auth.denied.Load() == 0 {
		t.Fatal("no denial counted")
	}
}

// listOffsetsCode sends ListOffsets for partition 0 of topic straight
// to the broker (franz-go would stop at Metadata for a topic the user
// may not see) and returns its error code.
func listOffsetsCode(t testing.TB, cl *kgo.Client, topic string) int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Broker(0).Request(ctx, newListOffsets(topic))
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
}

// TestMetadataListsPermittedTopics: listing all topics shows only those
// the user has a grant on; asking by name for another is
// TOPIC_AUTHORIZATION_FAILED; auto-creation happens only for a user who
// may produce to the topic.
func TestMetadataListsPermittedTopics(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	admin := authClient(t, ts, p, scramSHA512("admin", adminPassword))
	for _, topic := range []string{"orders.eu", "orders.us", "audit", "payroll"} {
		createTopic(t, admin, topic, 1)
	}
	ctx := context.Background()
	names := func(cl *kgo.Client, topics ...string) map[string]int16 {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		if topics != nil {
			req.Topics = []kmsg.MetadataRequestTopic{}
		}
		for _, topic := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int16{}
		for _, rt := range resp.Topics {
			out[*rt.Topic] = rt.ErrorCode
		}
		return out
	}
	reader := authClient(t, ts, p, scramSHA256("reader", readerPassword))
	if got := names(reader); len(got) != 2 || got["orders.eu"] != 0 || got["orders.us"] != 0 {
		t.Fatalf("reader lists %v, want orders.eu and orders.us", got)
	}
	if got := names(admin); len(got) != 4 {
		t.Fatalf("admin lists %v, want all four", got)
	}
	got := names(reader, "orders.eu", "payroll", "orders.new")
	want := map[string]int16{"orders.eu": 0, "payroll": kerr.TopicAuthorizationFailed.Code, "orders.new": kerr.UnknownTopicOrPartition.Code}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reader asked by name: %v, want %v", got, want)
	}
	if ts.exists("orders.new") {
		t.Fatal("a reader's metadata request created a topic")
	}
	alice := authClient(t, ts, p, scramSHA256("alice", alicePassword))
	if got := names(alice, "orders.new", "payroll.new"); got["orders.new"] != 0 || got["payroll.new"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice auto-creating: %v", got)
	}
	if !ts.exists("orders.new") || ts.exists("payroll.new") {
		t.Fatal("auto-creation did not follow the produce grant")
	}
}

// TestGroupAuthorization: a group outside the user's grants is refused
// with GROUP_AUTHORIZATION_FAILED; a permitted one works end to end
// with a franz-go group consumer.
func TestGroupAuthorization(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false, func(c *Config) { c.MinSessionTimeout = time.Second })
	alice := authClient(t, ts, p, scramSHA256("alice", alicePassword), kgo.AllowAutoTopicCreation())
	produceN(t, alice, "orders.eu", "r", 5)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "other-group"
	if resp, err := fc.RequestWith(ctx, alice); err != nil || resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("FindCoordinator other-group: %v %+v", err, resp)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "other-group", 6000, 6000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	// Straight to the broker: the client would stop at FindCoordinator.
	if resp, err := alice.Broker(0).Request(ctx, jg); err != nil || resp.(*kmsg.JoinGroupResponse).ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("JoinGroup other-group: %v %+v", err, resp)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "other-group"
	if resp, err := alice.Broker(0).Request(ctx, of); err != nil || resp.(*kmsg.OffsetFetchResponse).ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("OffsetFetch other-group: %v %+v", err, resp)
	}
	// reader has no group grant at all: a group consumer fails.
	reader := authClient(t, ts, p, scramSHA256("reader", readerPassword), kgo.ConsumerGroup("billing-1"), kgo.ConsumeTopics("orders.eu"))
	fs := reader.PollFetches(ctx)
	if err := fs.Err0(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("reader's group consumer: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	// alice in billing-1 consumes and commits.
	g := authClient(t, ts, p, scramSHA256("alice", alicePassword), kgo.ConsumerGroup("billing-1"), kgo.ConsumeTopics("orders.eu"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second))
	consume(t, g, 5)
	if err := g.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	admin := authClient(t, ts, p, scramSHA512("admin", adminPassword))
	if resp, err := lg.RequestWith(ctx, admin); err != nil || len(resp.Groups) != 1 {
		t.Fatalf("admin lists groups: %v %+v", err, resp)
	}
	if resp, err := lg.RequestWith(ctx, reader); err != nil || len(resp.Groups) != 0 {
		t.Fatalf("reader lists groups: %v %+v", err, resp)
	}
}

// TestAdminAuthorization: creating or deleting a topic needs an admin
// grant on it.
func TestAdminAuthorization(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	ctx := context.Background()
	alice := authClient(t, ts, p, scramSHA256("alice", alicePassword))
	admin := authClient(t, ts, p, scramSHA512("admin", adminPassword))
	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders.x", 1, 1
	create.Topics = append(create.Topics, rt)
	if resp, err := create.RequestWith(ctx, alice); err != nil || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice creating: %v %+v", err, resp)
	}
	if ts.exists("orders.x") {
		t.Fatal("created without an admin grant")
	}
	if resp, err := create.RequestWith(ctx, admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("admin creating: %v %+v", err, resp)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames = []string{"orders.x"}
	if resp, err := del.RequestWith(ctx, alice); err != nil || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice deleting: %v %+v", err, resp)
	}
	if !ts.exists("orders.x") {
		t.Fatal("deleted without an admin grant")
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: resourceBroker, ResourceName: "0"}}
	if resp, err := dc.RequestWith(ctx, alice); err != nil || resp.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice reading broker configs: %v %+v", err, resp)
	}
}

// TestUnauthenticatedRequestCloses: on a listener that requires
// authentication, ApiVersions is answered (advertising SaslHandshake
// v0-1, as librdkafka requires, and SaslAuthenticate v0-2) but any other request before
// authenticating closes the connection, and is counted.
func TestUnauthenticatedRequestCloses(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	c := dialTLS(t, ts, p, nil)
	resp, err := rawRequest(t, c, kmsg.ApiVersions.Int16(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var av kmsg.ApiVersionsResponse
	if err := av.ReadFrom(resp[4:]); err != nil {
		t.Fatal(err)
	}
	ranges := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		ranges[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if ranges[kmsg.SASLHandshake.Int16()] != [2]int16{0, 1} || ranges[kmsg.SASLAuthenticate.Int16()] != [2]int16{0, 2} {
		t.Fatalf("advertised SASL versions: handshake %v, authenticate %v", ranges[kmsg.SASLHandshake.Int16()], ranges[kmsg.SASLAuthenticate.Int16()])
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	_, err = rawRequest(t, c, kmsg.Metadata.Int16(), 1, req.AppendTo(nil))
	requireClosed(t, err, "a Metadata request before authentication")
	if n := ts.auth.unauthenticated.Load(); n != 1 {
		t.Fatalf("unauthenticated requests counted: %d", n)
	}
	// SaslAuthenticate before a handshake: ILLEGAL_SASL_STATE, then closed.
	c2 := dialTLS(t, ts, p, nil)
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.SASLAuthBytes = []byte("\x00alice\x00" + alicePassword)
	resp, err = rawRequest(t, c2, kmsg.SASLAuthenticate.Int16(), 0, sa.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	sar := kmsg.NewPtrSASLAuthenticateResponse()
	if err := sar.ReadFrom(resp[4:]); err != nil || sar.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate without handshake: %v %+v", err, sar)
	}
	_, err = c2.Read(make([]byte, 1))
	requireClosed(t, err, "after ILLEGAL_SASL_STATE")
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"

	// A wrong PLAIN password: SASL_AUTHENTICATION_FAILED, then closed.
	c4 := dialTLS(t, ts, p, nil)
	hs.SetVersion(1)
	if _, err := rawRequest(t, c4, kmsg.SASLHandshake.Int16(), 1, hs.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	sa.SASLAuthBytes = []byte("\x00alice\x00wrong")
	resp, err = rawRequest(t, c4, kmsg.SASLAuthenticate.Int16(), 0, sa.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := sar.ReadFrom(resp[4:]); err != nil || sar.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: %v %+v", err, sar)
	}
	_, err = c4.Read(make([]byte, 1))
	requireClosed(t, err, "after SASL_AUTHENTICATION_FAILED")
}

// dialTLS connects to ts over TLS, trusting the test CA, with cert as
// the client certificate (nil: none), until the test ends.
func dialTLS(t *testing.T, ts *testServer, p *authtest.PKI, cert *tls.Certificate) net.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", ts.addr, p.ClientTLS(cert))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// requireClosed fails unless err shows the server closed the
// connection (end of stream or reset), rather than a timeout.
func requireClosed(t *testing.T, err error, what string) {
	t.Helper()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server did not close the connection (%v)", what, err)
	}
}

// TestSaslHandshakeMechanisms: an unknown mechanism is answered
// UNSUPPORTED_SASL_MECHANISM with the list; on a server without
// authentication the list is empty.
func TestSaslHandshakeMechanisms(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	c := dialTLS(t, ts, p, nil)
	handshake := func(c net.Conn, mech string) *kmsg.SASLHandshakeResponse {
		t.Helper()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = mech
		resp, err := rawRequest(t, c, kmsg.SASLHandshake.Int16(), 1, hs.AppendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		r := kmsg.NewPtrSASLHandshakeResponse()
		r.SetVersion(1)
		if err := r.ReadFrom(resp[4:]); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := handshake(c, "GSSAPI")
	if r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(r.SupportedMechanisms, []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"}) {
		t.Fatalf("GSSAPI: %+v", r)
	}
	if r := handshake(c, "PLAIN"); r.ErrorCode != 0 {
		t.Fatalf("PLAIN: %+v", r)
	}
	plainTS := startServer(t, t.TempDir())
	if r := handshake(dial(t, plainTS.addr), "PLAIN"); r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(r.SupportedMechanisms) != 0 {
		t.Fatalf("server without authentication: %+v", r)
	}
}

// TestClientCertificatePrincipal: with client certificates verified, a
// certificate whose common name is a user authenticates the connection
// as that user without SASL; one naming nobody must still use SASL; a
// client without a certificate cannot connect.
func TestClientCertificatePrincipal(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, true)
	adminCert, _, _ := p.Issue(t, "admin-cert", false)
	admin := newClient(t, ts.addr, kgo.DialTLSConfig(p.ClientTLS(&adminCert)), kgo.SASL(scramSHA512("admin", adminPassword)))
	createTopic(t, admin, "orders.eu", 1)
	createTopic(t, admin, "audit", 1)
	produceN(t, admin, "orders.eu", "r", 3)

	carolCert, _, _ := p.Issue(t, "carol", false)
	carol := newClient(t, ts.addr, kgo.DialTLSConfig(p.ClientTLS(&carolCert)), kgo.ConsumeTopics("orders.eu"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consume(t, carol, 3)
	if code := listOffsetsCode(t, carol, "audit"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("carol's ListOffsets audit: error %d", code)
	}
	if ts.auth.certificates.Load() == 0 {
		t.Fatal("no certificate authentication counted")
	}

	strangerCert, _, _ := p.Issue(t, "stranger", false)
	c := dialTLS(t, ts, p, &strangerCert)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	_, err := rawRequest(t, c, kmsg.Metadata.Int16(), 1, req.AppendTo(nil))
	requireClosed(t, err, "a certificate naming no user, without SASL")

	bare, err := tls.Dial("tcp", ts.addr, p.ClientTLS(nil))
	if err == nil {
		defer bare.Close()
		_, err = rawRequest(t, bare, kmsg.ApiVersions.Int16(), 0, nil)
	}
	if err == nil {
		t.Fatal("a client without a certificate was served")
	}
}

// TestEveryAPIHasAnAuthorizationRule: each API the server answers has
// an authorization rule, so a handler added later cannot be reached by
// an authenticated user unchecked (authorized refuses an API without
// one).
func TestEveryAPIHasAnAuthorizationRule(t *testing.T) {
	for key := range supported {
		switch key {
		case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
			continue
		}
		if rules[key] == nil {
			t.Errorf("%s has no authorization rule", kmsg.NameForKey(key.Int16()))
		}
	}
}

// TestSplitKeepsAllWithoutAllocating: authorizing a request whose
// topics are all permitted, as nearly all are, allocates nothing; one
// with a refused topic splits it out, order kept.
func TestSplitKeepsAllWithoutAllocating(t *testing.T) {
	items := []string{"orders.a", "orders.b", "orders.c"}
	allowed := func(s string) bool { return strings.HasPrefix(s, "orders.") }
	if n := testing.AllocsPerRun(100, func() {
		kept, refused := split(items, allowed)
		if len(kept) != 3 || refused != nil {
			t.Fatalf("kept %v, refused %v", kept, refused)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per split of permitted items", n)
	}
	kept, refused := split([]string{"orders.a", "secret", "orders.b", "other"}, allowed)
	if !slices.Equal(kept, []string{"orders.a", "orders.b"}) || !slices.Equal(refused, []string{"secret", "other"}) {
		t.Fatalf("kept %v, refused %v", kept, refused)
	}
}

// TestRefusalLogRateLimited: a flood of unauthenticated connections
// leaves one warning, not one per connection.
func TestRefusalLogRateLimited(t *testing.T) {
	p := authtest.NewPKI(t)
	var logs lockedBuffer
	ts := startAuthServer(t, p, false, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	const n = 30
	started := time.Now()
	for i := 0; i < n; i++ {
		c, err := tls.Dial("tcp", ts.addr, p.ClientTLS(nil))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(1)
		rawRequest(t, c, kmsg.Metadata.Int16(), 1, req.AppendTo(nil))
		c.Close()
	}
	// Each refusal is counted before its connection closes, and the
	// client saw each close.
	if got := ts.auth.unauthenticated.Load(); got != n {
		t.Fatalf("counted %d of %d", got, n)
	}
	// One line per WarnLogGap at most (one, unless the machine is very slow).
	most := 1 + int(time.Since(started)/ts.Server.cfg.WarnLogGap)
	if lines := strings.Count(logs.String(), "request before authentication"); lines < 1 || lines > most {
		t.Fatalf("%d warnings for %d refused connections, want 1 to %d:\n%s", lines, n, most, logs.String())
	}
}

// TestSaslHandshakeV0: after SaslHandshake v0 the SASL tokens travel as
// bare size-prefixed frames (kafka-python 2.0, older Sarama): PLAIN
// gets an empty token back, SCRAM its server messages; then Kafka
// framing resumes and the user is authenticated. A wrong password
// closes the connection.
func TestSaslHandshakeV0(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	raw := func(c net.Conn, token string) ([]byte, error) {
		t.Helper()
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...)); err != nil {
			return nil, err
		}
		return readFrame(c)
	}
	handshake := func(mech string) net.Conn {
		t.Helper()
		c := dialTLS(t, ts, p, nil)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = mech
		resp, err := rawRequest(t, c, kmsg.SASLHandshake.Int16(), 0, hs.AppendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		r := kmsg.NewPtrSASLHandshakeResponse()
		if err := r.ReadFrom(resp[4:]); err != nil || r.ErrorCode != 0 {
			t.Fatalf("handshake v0: %v %+v", err, r)
		}
		return c
	}
	metadataWorks := func(c net.Conn) {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(1)
		resp, err := rawRequest(t, c, kmsg.Metadata.Int16(), 1, req.AppendTo(nil))
		if err != nil {
			t.Fatalf("Metadata after authenticating: %v", err)
		}
		mr := kmsg.NewPtrMetadataResponse()
		mr.SetVersion(1)
		if err := mr.ReadFrom(resp[4:]); err != nil || len(mr.Brokers) != 1 {
			t.Fatalf("Metadata: %v %+v", err, mr)
		}
	}

	c := handshake("PLAIN")
	if out, err := raw(c, "\x00alice\x00"+alicePassword); err != nil || len(out) != 0 {
		t.Fatalf("PLAIN token: %q %v", out, err)
	}
	metadataWorks(c)

	c = handshake("SCRAM-SHA-512")
	cl, err := xscram.SHA512.NewClientUnprepped("alice", alicePassword, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := cl.NewConversation()
	msg, _ := conv.Step("")
	for !conv.Done() {
		out, err := raw(c, msg)
		if err != nil {
			t.Fatalf("SCRAM token: %v", err)
		}
		if msg, err = conv.Step(string(out)); err != nil {
			t.Fatalf("server's SCRAM message %q: %v", out, err)
		}
	}
	if !conv.Valid() {
		t.Fatal("server signature not valid")
	}
	metadataWorks(c)

	c = handshake("PLAIN")
	_, err = raw(c, "\x00alice\x00wrong")
	requireClosed(t, err, "a wrong PLAIN password after SaslHandshake v0")
	if ts.auth.successes.Load() != 2 || ts.auth.failures.Load() != 1 {
		t.Fatalf("successes %d, failures %d", ts.auth.successes.Load(), ts.auth.failures.Load())
	}
}

// TestSaslHandshakeV0StalledToken: a bare SASL token that stops part
// way is a request too slow to arrive: closed at RequestTimeout and
// counted as slow, not as an idle connection.
func TestSaslHandshakeV0StalledToken(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false, func(c *Config) {
		c.RequestTimeout, c.IdleTimeout = 300*time.Millisecond, time.Minute
	})
	c := dialTLS(t, ts, p, nil)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	if _, err := rawRequest(t, c, kmsg.SASLHandshake.Int16(), 0, hs.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, 100), "\x00alice"...)); err != nil {
		t.Fatal(err)
	}
	_, err := readFrame(c)
	requireClosed(t, err, "a stalled SASL token")
	waitUntil(t, "the stalled token counted", func() bool {
		return ts.metrics.slowRequests.Load()+ts.metrics.idleClosed.Load() > 0
	})
	if slow, idle := ts.metrics.slowRequests.Load(), ts.metrics.idleClosed.Load(); slow != 1 || idle != 0 {
		t.Fatalf("slow requests %d, idle closed %d; want 1 and 0", slow, idle)
	}
}

// TestAcksZeroForbiddenCloses: an acks=0 produce has no answer to carry
// TOPIC_AUTHORIZATION_FAILED, so, as in Kafka, the connection closes
// after the permitted topics of the request are written.
func TestAcksZeroForbiddenCloses(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	c := dialTLS(t, ts, p, nil)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	if _, err := rawRequest(t, c, kmsg.SASLHandshake.Int16(), 1, hs.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.SASLAuthBytes = []byte("\x00alice\x00" + alicePassword)
	resp, err := rawRequest(t, c, kmsg.SASLAuthenticate.Int16(), 0, sa.AppendTo(nil))
	if err != nil || binary.BigEndian.Uint16(resp[4:]) != 0 {
		t.Fatalf("PLAIN login: %v %x", err, resp)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 0, 5000
	for _, topic := range []string{"orders.x", "audit"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = recordBatch([]byte("v"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	_, err = rawRequest(t, c, kmsg.Produce.Int16(), 7, req.AppendTo(nil))
	requireClosed(t, err, "an acks=0 produce naming a forbidden topic")
	log, err := ts.store.Partition("orders.x", 0)
	if err != nil || log.EndOffset() != 1 {
		t.Fatalf("the permitted topic: %v, end offset %v", err, log)
	}
	if ts.exists("audit") {
		t.Fatal("the forbidden topic was created")
	}
}

// TestOffsetCommitDeniedGroupWithoutTopics: an OffsetCommit naming a
// group the user may not use is refused whole, as Kafka refuses it,
// even when it names no topic: it never reaches the coordinator, where
// a commit from a member (named by member id and generation) counts as
// its heartbeat, so a user without a grant on the group cannot keep
// another's member alive after its session should have expired.
func TestOffsetCommitDeniedGroupWithoutTopics(t *testing.T) {
	p := authtest.NewPKI(t)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	ts := startAuthServer(t, p, false, func(c *Config) { c.Now, c.MinSessionTimeout = now, time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := authClient(t, ts, p, scramSHA256("alice", alicePassword))
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "billing-1", 6000, 6000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	var joined *kmsg.JoinGroupResponse
	for range 2 { // the first may be MEMBER_ID_REQUIRED
		r, err := alice.Broker(0).Request(ctx, jg)
		if err != nil {
			t.Fatal(err)
		}
		joined = r.(*kmsg.JoinGroupResponse)
		if joined.ErrorCode != kerr.MemberIDRequired.Code {
			break
		}
		jg.MemberID = joined.MemberID
	}
	if joined.ErrorCode != 0 {
		t.Fatalf("alice joins billing-1: error %d", joined.ErrorCode)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.Generation, sg.MemberID = "billing-1", joined.Generation, joined.MemberID
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: joined.MemberID}}
	if r, err := alice.Broker(0).Request(ctx, sg); err != nil || r.(*kmsg.SyncGroupResponse).ErrorCode != 0 {
		t.Fatalf("alice syncs billing-1: %v %+v", err, r)
	}

	// Five seconds on, reader (no group grant) commits nothing in
	// alice's name.
	clock.Add(int64(5 * time.Second))
	reader := authClient(t, ts, p, scramSHA256("reader", readerPassword))
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID = "billing-1", joined.Generation, joined.MemberID
	if _, err := reader.Broker(0).Request(ctx, oc); err != nil {
		t.Fatal(err)
	}
	if n := ts.auth.denied.Load(); n != 1 {
		t.Fatalf("denials counted: %d, want 1", n)
	}
	// Seven seconds after alice was last heard from, her 6 s session
	// has expired.
	clock.Add(int64(2 * time.Second))
	ts.groups.Tick(now())
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"billing-1"}
	r, err := alice.Broker(0).Request(ctx, dg)
	if err != nil {
		t.Fatal(err)
	}
	if g := r.(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != 0 || len(g.Members) != 0 {
		t.Fatalf("billing-1 after alice's session: error %d, members %d, want none (kept alive by reader's commit)", g.ErrorCode, len(g.Members))
	}
}

// TestSaslRequestDuringExchangeCloses: after a SaslHandshake only
// SaslAuthenticate may come, as in Kafka: a second SaslHandshake is
// answered ILLEGAL_SASL_STATE and the connection closes, another request
// (ApiVersions) closes it unanswered; each counts as a failed exchange.
// Once authenticated, a SaslHandshake is ILLEGAL_SASL_STATE and the
// connection stays open, as on a Kafka broker without re-authentication.
func TestSaslRequestDuringExchangeCloses(t *testing.T) {
	p := authtest.NewPKI(t)
	ts := startAuthServer(t, p, false)
	handshake := func(c net.Conn) (*kmsg.SASLHandshakeResponse, error) {
		t.Helper()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = "PLAIN"
		resp, err := rawRequest(t, c, kmsg.SASLHandshake.Int16(), 1, hs.AppendTo(nil))
		if err != nil {
			return nil, err
		}
		r := kmsg.NewPtrSASLHandshakeResponse()
		r.SetVersion(1)
		if err := r.ReadFrom(resp[4:]); err != nil {
			t.Fatal(err)
		}
		return r, nil
	}

	c := dialTLS(t, ts, p, nil)
	if r, err := handshake(c); err != nil || r.ErrorCode != 0 {
		t.Fatalf("first handshake: %v %+v", err, r)
	}
	r, err := handshake(c)
	if err != nil || r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second handshake: %v %+v", err, r)
	}
	_, err = c.Read(make([]byte, 1))
	requireClosed(t, err, "a second SaslHandshake during the exchange")
	if n := ts.auth.failures.Load(); n != 1 {
		t.Fatalf("failed exchanges counted: %d", n)
	}

	c = dialTLS(t, ts, p, nil)
	if r, err := handshake(c); err != nil || r.ErrorCode != 0 {
		t.Fatalf("handshake: %v %+v", err, r)
	}
	_, err = rawRequest(t, c, kmsg.ApiVersions.Int16(), 0, nil)
	requireClosed(t, err, "ApiVersions during the exchange")
	if n := ts.auth.failures.Load(); n != 2 {
		t.Fatalf("failed exchanges counted: %d", n)
	}

	c = dialTLS(t, ts, p, nil)
	if r, err := handshake(c); err != nil || r.ErrorCode != 0 {
		t.Fatalf("handshake: %v %+v", err, r)
	}
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.SASLAuthBytes = []byte("\x00alice\x00" + alicePassword)
	resp, err := rawRequest(t, c, kmsg.SASLAuthenticate.Int16(), 0, sa.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	sar := kmsg.NewPtrSASLAuthenticateResponse()
	if err := sar.ReadFrom(resp[4:]); err != nil || sar.ErrorCode != 0 {
		t.Fatalf("authenticate: %v %+v", err, sar)
	}
	if r, err := handshake(c); err != nil || r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authenticating: %v %+v", err, r)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	resp, err = rawRequest(t, c, kmsg.Metadata.Int16(), 1, req.AppendTo(nil))
	if err != nil {
		t.Fatalf("Metadata after a refused re-authentication: %v", err)
	}
	mr := kmsg.NewPtrMetadataResponse()
	mr.SetVersion(1)
	if err := mr.ReadFrom(resp[4:]); err != nil || len(mr.Brokers) != 1 {
		t.Fatalf("Metadata: %v %+v", err, mr)
	}
	if n := ts.auth.failures.Load(); n != 2 {
		t.Fatalf("failed exchanges counted: %d", n)
	}
}
