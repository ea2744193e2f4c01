package statsd

// The brokerless server refuses a line whose key is longer than
// MaxKeyLen bytes or that has more than MaxTags tags (Parser), counting
// it in statsd.bad_lines_seen. The client refuses such a metric at the
// call instead, dropped and counted in its Stats, so that every line it
// sends is one the server takes.

// measureTags is what tags add to the key the brokerless server builds,
// at most, and how many of them it counts against MaxTags: ';' and the
// tag for each that is not empty (the client turns a ',' in a tag into
// '_', so each is one tag on the wire). The server's key is never
// longer: sanitizing turns a character into at most one, ':' becoming
// '=' keeps the length, and a repeated tag or one with an empty name or
// value is left out. With the name's length it is the server's key
// length exactly when sanitizing leaves name and tags as they are and
// the tags are distinct, none with an empty name or value; it holds
// whether or not the server sanitizes (Config.NoSanitize).
func measureTags(tags []string) (keyBytes, n int) {
	for _, t := range tags {
		if t != "" {
			keyBytes += len(";") + len(t)
			n++
		}
	}
	return keyBytes, n
}

// keyFits reports whether the brokerless server takes the key of a
// metric: name after ClientConfig.Prefix, tags after ClientConfig.Tags.
// When it does not, the metric's lines are counted as dropped, as
// negative durations and non-finite values are.
func (c *Client) keyFits(name string, tags []string, lines int) bool {
	b, k := measureTags(tags)
	if len(c.cfg.Prefix)+len(name)+c.defaultKey+b <= MaxKeyLen && c.defaultN+k <= MaxTags {
		return true
	}
	c.counters.dropped.Add(uint64(lines))
	return false
}
