package logd

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/auth"
)

// authorized answers a request (other than ApiVersions, answered
// before) on a server that requires authentication: before the
// connection authenticates only SaslHandshake and SaslAuthenticate pass,
// and anything else closes it; after, each request is checked against
// the user's grants (package logd/auth documents which operation each
// API needs). What a user may not touch is answered with Kafka's
// authorization errors — TOPIC_AUTHORIZATION_FAILED per topic or
// partition, GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED —
// and the rest of the request goes to its handler as usual. Metadata
// leaves out the topics the user has no grant on.
func (s *Server) authorized(cl *client, req *request) (kmsg.Response, error) {
	a := cl.auth
	if a == nil {
		return s.dispatch(cl, req)
	}
	switch req.body.(type) {
	case *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest:
		return s.dispatch(cl, req)
	}
	if !s.authenticated(a) { // readRequest's preauthGate refused it already; kept as a second line
		s.auth.unauthenticated.Add(1)
		s.warn(&s.warnings.unauthenticated, "logd: closing connection: request before authentication", "remote", a.conn.RemoteAddr().String(), "client", req.clientID, "api", kmsg.NameForKey(req.key))
		cl.hangUp = true
		return nil, nil
	}
	rule := rules[kmsg.Key(req.key)]
	if rule == nil {
		// Every supported API has a rule (TestEveryAPIHasAnAuthorizationRule);
		// one added without is refused rather than left open.
		return nil, &FrameError{Key: req.key, Version: req.version, Reason: "no authorization rule for this API"}
	}
	z := &authz{s: s, cl: cl, req: req, user: a.user}
	resp, err := rule(z)
	if err != nil || resp == nil {
		return resp, err
	}
	resp.SetVersion(req.version)
	return resp, nil
}

// authz is one request being authorized.
type authz struct {
	s      *Server
	cl     *client
	req    *request
	user   *auth.User
	denied int // topics, partitions or groups refused
}

// dispatch hands the (possibly narrowed) request to its handler and
// counts what was refused.
func (z *authz) dispatch() (kmsg.Response, error) {
	z.count()
	return z.s.dispatch(z.cl, z.req)
}

func (z *authz) count() {
	if z.denied > 0 {
		z.s.auth.denied.Add(uint64(z.denied))
	}
}

// refuse answers the whole request with resp, counting one refusal.
func (z *authz) refuse(resp kmsg.Response) (kmsg.Response, error) {
	z.denied++
	z.count()
	return resp, nil
}

// rules maps every API (but ApiVersions and SASL) to its authorization.
var rules = map[kmsg.Key]func(*authz) (kmsg.Response, error){
	kmsg.Produce:         (*authz).produce,
	kmsg.Fetch:           (*authz).fetch,
	kmsg.ListOffsets:     (*authz).listOffsets,
	kmsg.Metadata:        (*authz).metadata,
	kmsg.OffsetCommit:    (*authz).offsetCommit,
	kmsg.OffsetFetch:     (*authz).offsetFetch,
	kmsg.FindCoordinator: (*authz).findCoordinator,
	kmsg.JoinGroup:       (*authz).joinGroup,
	kmsg.Heartbeat:       (*authz).heartbeat,
	kmsg.LeaveGroup:      (*authz).leaveGroup,
	kmsg.SyncGroup:       (*authz).syncGroup,
	kmsg.DescribeGroups:  (*authz).describeGroups,
	kmsg.ListGroups:      (*authz).listGroups,
	kmsg.CreateTopics:    (*authz).createTopics,
	kmsg.DeleteTopics:    (*authz).deleteTopics,
	kmsg.InitProducerID:  (*authz).initProducerID,
	kmsg.DescribeConfigs: (*authz).describeConfigs,
}

var (
	topicDenied   = kerr.TopicAuthorizationFailed.Code
	groupDenied   = kerr.GroupAuthorizationFailed.Code
	clusterDenied = kerr.ClusterAuthorizationFailed.Code
)

// split partitions items into those keep allows and the others. When
// keep allows them all, as it does for nearly every request, kept is
// items itself: nothing is allocated.
func split[T any](items []T, keep func(T) bool) (kept, refused []T) {
	for i, it := range items {
		if keep(it) {
			continue
		}
		kept, refused = slices.Clone(items[:i]), []T{it}
		for _, it := range items[i+1:] {
			if keep(it) {
				kept = append(kept, it)
			} else {
				refused = append(refused, it)
			}
		}
		return kept, refused
	}
	return items, nil
}

// produce needs produce on each topic (which also lets the handler
// auto-create it). An acks=0 produce that names a forbidden topic has
// no answer to carry the error, so, as Kafka does, the connection is
// closed after the permitted topics are written.
func (z *authz) produce() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.ProduceRequest)
	var refused []kmsg.ProduceRequestTopic
	body.Topics, refused = split(body.Topics, func(t kmsg.ProduceRequestTopic) bool { return z.user.Allowed(auth.Produce, t.Topic) })
	for _, t := range refused {
		z.denied += len(t.Partitions)
	}
	if len(refused) == 0 {
		return z.dispatch()
	}
	if body.Acks == 0 {
		z.cl.hangUp = true
		if len(body.Topics) == 0 {
			z.count()
			return nil, nil
		}
		return z.dispatch()
	}
	resp := kmsg.NewPtrProduceResponse()
	if len(body.Topics) > 0 {
		r, err := z.dispatch()
		if err != nil || r == nil {
			return r, err
		}
		resp = r.(*kmsg.ProduceResponse)
	} else {
		z.count()
	}
	for _, t := range refused {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, produceError(p.Partition, topicDenied))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fetch needs consume on each topic. A fetch left with no topic is
// answered at once rather than long-polled.
func (z *authz) fetch() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.FetchRequest)
	var refused []kmsg.FetchRequestTopic
	body.Topics, refused = split(body.Topics, func(t kmsg.FetchRequestTopic) bool { return z.user.Allowed(auth.Consume, t.Topic) })
	if len(refused) == 0 {
		return z.dispatch()
	}
	resp := kmsg.NewPtrFetchResponse()
	for _, t := range refused {
		z.denied += len(t.Partitions)
	}
	if len(body.Topics) > 0 {
		r, err := z.dispatch()
		if err != nil {
			return nil, err
		}
		resp = r.(*kmsg.FetchResponse)
	} else {
		z.count()
	}
	for _, t := range refused {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, topicDenied
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.PreferredReadReplica = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// listOffsets needs any grant on the topic (Kafka's Describe): offsets
// say nothing of the records.
func (z *authz) listOffsets() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.ListOffsetsRequest)
	var refused []kmsg.ListOffsetsRequestTopic
	body.Topics, refused = split(body.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return z.user.SeesTopic(t.Topic) })
	if len(refused) == 0 {
		return z.dispatch()
	}
	for _, t := range refused {
		z.denied += len(t.Partitions)
	}
	resp := kmsg.NewPtrListOffsetsResponse()
	if len(body.Topics) > 0 {
		r, err := z.dispatch()
		if err != nil {
			return nil, err
		}
		resp = r.(*kmsg.ListOffsetsResponse)
	} else {
		z.count()
	}
	for _, t := range refused {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.Offset, rp.Timestamp = p.Partition, topicDenied, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// metadata lists only topics the user has a grant on. A topic asked
// for by name without one is answered TOPIC_AUTHORIZATION_FAILED; an
// unknown topic is auto-created only for a user who may produce to it
// (or administer it), and is UNKNOWN_TOPIC_OR_PARTITION for the others.
func (z *authz) metadata() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.MetadataRequest)
	all := body.Topics == nil || (body.Version == 0 && len(body.Topics) == 0)
	var decided []kmsg.MetadataResponseTopic
	wanted := map[string]bool{} // asked for by name, and seen by the user
	if !all {
		asked := body.Topics
		body.Topics = []kmsg.MetadataRequestTopic{}
		for _, t := range asked {
			if t.Topic == nil {
				continue
			}
			name := *t.Topic
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(name)
			switch {
			case !z.user.SeesTopic(name):
				mt.ErrorCode = topicDenied
				z.denied++
			case !z.user.Allowed(auth.Produce, name) && !z.user.Allowed(auth.Admin, name) && !z.s.exists(name):
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				body.Topics = append(body.Topics, t)
				wanted[name] = true
				continue
			}
			decided = append(decided, mt)
		}
	}
	r, err := z.dispatch()
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.MetadataResponse)
	resp.Topics, _ = split(resp.Topics, func(t kmsg.MetadataResponseTopic) bool {
		switch {
		case t.Topic == nil:
			return false
		case all: // the permitted topics
			return z.user.SeesTopic(*t.Topic)
		}
		// By name: those asked for (a v0 request left with none would
		// otherwise list all).
		return wanted[*t.Topic]
	})
	resp.Topics = append(resp.Topics, decided...)
	return resp, nil
}

// exists reports whether a topic exists.
func (s *Server) exists(topic string) bool {
	_, ok := s.store.Topic(topic)
	return ok
}

// offsetCommit needs group on the group and consume on each topic. A
// group the user may not use refuses the whole request, as in Kafka,
// even one naming no topic: the coordinator takes a member's commit as
// its heartbeat, which would let the user keep another's member alive.
func (z *authz) offsetCommit() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.OffsetCommitRequest)
	if !z.user.Allowed(auth.Group, body.Group) {
		resp := kmsg.NewPtrOffsetCommitResponse()
		for _, t := range body.Topics {
			resp.Topics = append(resp.Topics, offsetCommitErrors(t, groupDenied))
			z.denied += len(t.Partitions)
		}
		z.denied = max(z.denied, 1) // the group, when no partition is named
		z.count()
		return resp, nil
	}
	var refused []kmsg.OffsetCommitRequestTopic
	body.Topics, refused = split(body.Topics, func(t kmsg.OffsetCommitRequestTopic) bool {
		return z.user.Allowed(auth.Consume, t.Topic)
	})
	if len(refused) == 0 {
		return z.dispatch()
	}
	for _, t := range refused {
		z.denied += len(t.Partitions)
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	if len(body.Topics) > 0 {
		r, err := z.dispatch()
		if err != nil {
			return nil, err
		}
		resp = r.(*kmsg.OffsetCommitResponse)
	} else {
		z.count()
	}
	for _, t := range refused {
		resp.Topics = append(resp.Topics, offsetCommitErrors(t, topicDenied))
	}
	return resp, nil
}

// offsetCommitErrors answers each partition of t with code.
func offsetCommitErrors(t kmsg.OffsetCommitRequestTopic, code int16) kmsg.OffsetCommitResponseTopic {
	rt := kmsg.NewOffsetCommitResponseTopic()
	rt.Topic = t.Topic
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, code
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// offsetFetch needs group on the group and consume on each topic; asked
// for all topics, it answers those the user may consume.
func (z *authz) offsetFetch() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.OffsetFetchRequest)
	if !z.user.Allowed(auth.Group, body.Group) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.ErrorCode = groupDenied
		for _, t := range body.Topics { // v1 has no top-level error code
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, offsetFetchError(p, groupDenied))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return z.refuse(resp)
	}
	if body.Topics == nil {
		r, err := z.dispatch()
		if err != nil {
			return nil, err
		}
		resp := r.(*kmsg.OffsetFetchResponse)
		resp.Topics, _ = split(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return z.user.Allowed(auth.Consume, t.Topic) })
		return resp, nil
	}
	var refused []kmsg.OffsetFetchRequestTopic
	body.Topics, refused = split(body.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return z.user.Allowed(auth.Consume, t.Topic) })
	if len(refused) == 0 {
		return z.dispatch()
	}
	for _, t := range refused {
		z.denied += len(t.Partitions)
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	if len(body.Topics) > 0 {
		r, err := z.dispatch()
		if err != nil {
			return nil, err
		}
		resp = r.(*kmsg.OffsetFetchResponse)
	} else {
		z.count()
	}
	for _, t := range refused {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, offsetFetchError(p, topicDenied))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func offsetFetchError(partition int32, code int16) kmsg.OffsetFetchResponseTopicPartition {
	p := kmsg.NewOffsetFetchResponseTopicPartition()
	p.Partition, p.ErrorCode, p.Offset, p.LeaderEpoch = partition, code, -1, -1
	return p
}

// coordinatorTxn is FindCoordinator's key type for transactional ids.
const coordinatorTxn = 1

// findCoordinator needs group on each group key; transactional keys
// are refused (logd has no transactions).
func (z *authz) findCoordinator() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.FindCoordinatorRequest)
	code := groupDenied
	if body.CoordinatorType == coordinatorTxn {
		code = kerr.TransactionalIDAuthorizationFailed.Code
	}
	allowed := func(key string) bool {
		return body.CoordinatorType != coordinatorTxn && z.user.Allowed(auth.Group, key)
	}
	if body.Version < 4 {
		if allowed(body.CoordinatorKey) {
			return z.dispatch()
		}
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.ErrorCode, resp.NodeID = code, -1
		return z.refuse(resp)
	}
	var refused []string
	body.CoordinatorKeys, refused = split(body.CoordinatorKeys, allowed)
	z.denied += len(refused)
	r, err := z.dispatch()
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.FindCoordinatorResponse)
	for _, key := range refused {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.ErrorCode = key, -1, code
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

// groupRule lets a request through when the user may use group, and
// otherwise answers it with refused's response carrying
// GROUP_AUTHORIZATION_FAILED.
func (z *authz) groupRule(group string, refused func() kmsg.Response) (kmsg.Response, error) {
	if z.user.Allowed(auth.Group, group) {
		return z.dispatch()
	}
	return z.refuse(refused())
}

func (z *authz) joinGroup() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.JoinGroupRequest)
	return z.groupRule(body.Group, func() kmsg.Response {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.ErrorCode = groupDenied
		return resp
	})
}

func (z *authz) syncGroup() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.SyncGroupRequest)
	return z.groupRule(body.Group, func() kmsg.Response {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = groupDenied
		return resp
	})
}

func (z *authz) heartbeat() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.HeartbeatRequest)
	return z.groupRule(body.Group, func() kmsg.Response {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = groupDenied
		return resp
	})
}

func (z *authz) leaveGroup() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.LeaveGroupRequest)
	return z.groupRule(body.Group, func() kmsg.Response {
		resp := kmsg.NewPtrLeaveGroupResponse()
		resp.ErrorCode = groupDenied
		return resp
	})
}

// describeGroups answers GROUP_AUTHORIZATION_FAILED for each group the
// user may not use.
func (z *authz) describeGroups() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.DescribeGroupsRequest)
	var refused []string
	body.Groups, refused = split(body.Groups, func(g string) bool { return z.user.Allowed(auth.Group, g) })
	z.denied += len(refused)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	if len(body.Groups) > 0 {
		r, err := z.dispatch()
		if err != nil {
			return nil, err
		}
		resp = r.(*kmsg.DescribeGroupsResponse)
	} else {
		z.count()
	}
	for _, g := range refused {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, groupDenied
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// listGroups lists only the groups the user may use.
func (z *authz) listGroups() (kmsg.Response, error) {
	r, err := z.dispatch()
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.ListGroupsResponse)
	resp.Groups, _ = split(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return z.user.Allowed(auth.Group, g.Group) })
	return resp, nil
}

// createTopics needs admin on each topic.
func (z *authz) createTopics() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.CreateTopicsRequest)
	var refused []kmsg.CreateTopicsRequestTopic
	body.Topics, refused = split(body.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return z.user.Allowed(auth.Admin, t.Topic) })
	z.denied += len(refused)
	r, err := z.dispatch()
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.CreateTopicsResponse)
	for _, t := range refused {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, topicDenied
		rt.ErrorMessage = kmsg.StringPtr("no admin grant on this topic")
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// deleteTopics needs admin on each topic.
func (z *authz) deleteTopics() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.DeleteTopicsRequest)
	var refused []string
	body.TopicNames, refused = split(body.TopicNames, func(name string) bool { return z.user.Allowed(auth.Admin, name) })
	var refusedTopics []kmsg.DeleteTopicsRequestTopic
	body.Topics, refusedTopics = split(body.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
		return t.Topic != nil && z.user.Allowed(auth.Admin, *t.Topic)
	})
	for _, t := range refusedTopics {
		if t.Topic != nil {
			refused = append(refused, *t.Topic)
		}
	}
	z.denied += len(refused)
	r, err := z.dispatch()
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.DeleteTopicsResponse)
	for _, name := range refused {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), topicDenied
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// initProducerID: an idempotent producer id for a user who may produce
// somewhere (Kafka asks for Write on any topic); transactional ids go
// to the handler, which refuses them.
func (z *authz) initProducerID() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.InitProducerIDRequest)
	if body.TransactionalID != nil || z.user.Holds(auth.Produce) {
		return z.dispatch()
	}
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = clusterDenied, -1, -1
	return z.refuse(resp)
}

// describeConfigs: a topic's configs for a user with any grant on it,
// the broker's for a user with an admin grant.
func (z *authz) describeConfigs() (kmsg.Response, error) {
	body := z.req.body.(*kmsg.DescribeConfigsRequest)
	allowed := func(r kmsg.DescribeConfigsRequestResource) bool {
		switch r.ResourceType {
		case resourceTopic:
			return z.user.SeesTopic(r.ResourceName)
		case resourceBroker:
			return z.user.Holds(auth.Admin)
		}
		return true // the handler refuses other resource types
	}
	var refused []kmsg.DescribeConfigsRequestResource
	body.Resources, refused = split(body.Resources, allowed)
	z.denied += len(refused)
	r, err := z.dispatch()
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.DescribeConfigsResponse)
	for _, res := range refused {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, topicDenied
		if res.ResourceType == resourceBroker {
			rr.ErrorCode = clusterDenied
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
