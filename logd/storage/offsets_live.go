package storage

// The in-memory accounting of committed offsets: every change of the
// offsets held goes through these, which keep two counts up to date —
// bytes, the budget's (MaxOffsetBytes, offsets_budget.go), and live,
// what a rewrite of the offsets log writes (one commit record per
// group), which decides when the file is rewritten. Both are functions
// of the offsets held, so replaying the log on Open rebuilds them
// exactly. o.mu is held (or the store is being opened).

// commitRecordBytes is the size of a group's commit record (version
// 1) without its offsets; commitOffsetBytes what each offset adds.
func commitRecordBytes(group string) int64 {
	return offRecHeaderLen + 1 + 8 + 2 + int64(len(group)) + 4
}

func commitOffsetBytes(x GroupOffset) int64 {
	return 2 + int64(len(x.Topic)) + 4 + 8 + 2 + int64(len(x.Metadata))
}

// addGroup adds a group without offsets.
func (o *OffsetStore) addGroup(name string) *offGroup {
	g := &offGroup{offs: map[groupKey]GroupOffset{}, bytes: groupBytes(name), live: commitRecordBytes(name)}
	o.groups[name] = g
	o.bytes += g.bytes
	o.live += g.live
	return g
}

// dropGroup forgets a group and its offsets.
func (o *OffsetStore) dropGroup(name string, g *offGroup) {
	o.bytes -= g.bytes
	o.live -= g.live
	delete(o.groups, name)
}

// setOffset stores x in g, replacing the offset of its partition.
func (o *OffsetStore) setOffset(g *offGroup, x GroupOffset) {
	k := groupKey{x.Topic, x.Partition}
	if old, ok := g.offs[k]; ok {
		o.dropOffset(g, k, old)
	}
	g.offs[k] = x
	g.bytes += entryBytes(x)
	o.bytes += entryBytes(x)
	g.live += commitOffsetBytes(x)
	o.live += commitOffsetBytes(x)
}

// dropOffset forgets offset x of partition k of g.
func (o *OffsetStore) dropOffset(g *offGroup, k groupKey, x GroupOffset) {
	delete(g.offs, k)
	g.bytes -= entryBytes(x)
	o.bytes -= entryBytes(x)
	g.live -= commitOffsetBytes(x)
	o.live -= commitOffsetBytes(x)
}
