package logd

import "github.com/twmb/franz-go/pkg/kmsg"

// versionRange is the range of versions of one API the server speaks.
type versionRange struct{ min, max int16 }

// supported lists every API the server answers and the versions it
// implements, which ApiVersions advertises. The ranges reach back far
// enough for older clients (Metadata 0, Produce 3, Fetch 4, JoinGroup 0,
// OffsetCommit 2, OffsetFetch 1) and forward only as far as implemented:
// versions that identify topics by ID (Produce 13, Fetch 13, OffsetFetch
// 10, Metadata 10+) are not advertised.
var supported = map[kmsg.Key]versionRange{
	kmsg.Produce:         {3, 9},
	kmsg.Fetch:           {4, 12},
	kmsg.ListOffsets:     {0, 7},
	kmsg.Metadata:        {0, 9},
	kmsg.OffsetCommit:    {2, 8},
	kmsg.OffsetFetch:     {1, 7},
	kmsg.FindCoordinator: {0, 4},
	kmsg.JoinGroup:       {0, 7},
	kmsg.Heartbeat:       {0, 4},
	kmsg.LeaveGroup:      {0, 4},
	kmsg.SyncGroup:       {0, 5},
	kmsg.DescribeGroups:  {0, 5},
	kmsg.ListGroups:      {0, 4},
	kmsg.ApiVersions:     {0, 4},
	kmsg.CreateTopics:    {0, 7},
	kmsg.DeleteTopics:    {0, 5},
	kmsg.InitProducerID:  {0, 4},
	kmsg.DescribeConfigs: {0, 4},
}

// supports reports whether the server speaks version v of key.
func supports(key, v int16) bool {
	r, ok := supported[kmsg.Key(key)]
	return ok && v >= r.min && v <= r.max
}
