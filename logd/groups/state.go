package groups

// State is a group's state, named as Kafka names it in DescribeGroups and
// ListGroups.
type State uint8

// The states of a group. StateDead is only reported, for groups the
// coordinator does not know.
const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

var stateNames = [...]string{
	StateEmpty:               "Empty",
	StatePreparingRebalance:  "PreparingRebalance",
	StateCompletingRebalance: "CompletingRebalance",
	StateStable:              "Stable",
	StateDead:                "Dead",
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}
