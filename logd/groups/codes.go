package groups

import "github.com/twmb/franz-go/pkg/kerr"

// The Kafka error codes the coordinator answers with.
var (
	codeUnknownMember      = kerr.UnknownMemberID.Code
	codeFenced             = kerr.FencedInstanceID.Code
	codeIllegalGeneration  = kerr.IllegalGeneration.Code
	codeRebalancing        = kerr.RebalanceInProgress.Code
	codeInconsistent       = kerr.InconsistentGroupProtocol.Code
	codeInvalidGroup       = kerr.InvalidGroupID.Code
	codeInvalidSession     = kerr.InvalidSessionTimeout.Code
	codeMemberIDRequired   = kerr.MemberIDRequired.Code
	codeGroupFull          = kerr.GroupMaxSizeReached.Code
	codeUnavailable        = kerr.CoordinatorNotAvailable.Code
	codeInvalidRequest     = kerr.InvalidRequest.Code
	codeUnknownPartition   = kerr.UnknownTopicOrPartition.Code
	codeMetadataTooLarge   = kerr.OffsetMetadataTooLarge.Code
	codeGroupNotFound      = kerr.GroupIDNotFound.Code
	codeUnknownServerError = kerr.UnknownServerError.Code
)
