package statsd

// The brokerless server refuses a line whose key is longer than
// MaxKeyLen bytes or that has more than MaxTags tags (Parser), counting
// it in statsd.bad_lines_seen. The client refuses such a metric at the
// call instead, dropped and counted in its Stats, so that every line it
// sends is one the server takes.

// clientKeyLen is the length of the key the brokerless server builds
// from name and tags, at most: the name, then ';' and the tag for each
// tag that is not empty. The server's key is never longer: sanitizing
// turns a character into at most one, ':' becoming '=' keeps the
// length, and a repeated tag or one with an empty name or value is left
// out. It is the server's key length exactly when sanitizing leaves the
// name and tags as they are and the tags are distinct, none with an
// empty name or value; it holds whether or not the server sanitizes
// (Config.NoSanitize).
func clientKeyLen(name string, tags []string) int {
	n := len(name)
	for _, t := range tags {
		if t != "" {
			n += len(";") + len(t)
		}
	}
	return n
}

// clientTagCount is the number of tags the brokerless server counts
// against MaxTags: those that are not empty (the client turns a ',' in
// a tag into '_', so each is one tag on the wire).
func clientTagCount(tags []string) int {
	n := 0
	for _, t := range tags {
		if t != "" {
			n++
		}
	}
	return n
}

// keyFits reports whether the brokerless server takes the key of a
// metric: name after ClientConfig.Prefix, tags after ClientConfig.Tags.
// When it does not, the metric's lines are counted as dropped, as
// negative durations and non-finite values are.
func (c *Client) keyFits(name string, tags []string, lines int) bool {
	n, k := len(c.cfg.Prefix)+len(name)+c.defaultKey, c.defaultN
	for _, t := range tags {
		if t != "" {
			n += len(";") + len(t)
			k++
		}
	}
	if n <= MaxKeyLen && k <= MaxTags {
		return true
	}
	c.counters.dropped.Add(uint64(lines))
	return false
}
