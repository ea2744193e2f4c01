package reliable

// interner turns received topic and header-key bytes into strings
// without allocating for names it has seen. It is bounded: past max
// distinct names it allocates a fresh string each time instead.
type interner struct {
	m    map[string]string
	max  int
	last string // a feed often repeats one topic: checked before the map
}

func newInterner(max int) interner { return interner{m: make(map[string]string), max: max} }

func (in *interner) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if string(b) == in.last {
		return in.last
	}
	if s, ok := in.m[string(b)]; ok {
		in.last = s
		return s
	}
	s := string(b)
	if len(in.m) < in.max {
		in.m[s] = s
	}
	return s
}
