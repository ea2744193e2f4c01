// Package offbudget is the byte budget of consumer groups' committed
// offsets, shared by logd/storage's OffsetStore (Storage.MaxOffsetBytes)
// and logd/groups' MemoryStore, so that both account the same offsets at
// the same bytes and refuse the same commits.
//
// Every group and every committed partition is accounted at about what
// it costs in memory: its strings plus the map entries and fields that
// hold them ([Group], [Entry]). [Growth] is what a commit adds (the last
// commit of a partition named twice in one commit is the one kept), and
// [Check] refuses a commit that would take the offsets held past the
// budget — never one that adds nothing, so a store over a lowered
// budget still serves.
package offbudget
