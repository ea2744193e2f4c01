package zmq

import "math/rand/v2"

// faults drops, duplicates and reorders received ZMTP messages on
// purpose (Config.Loss, Duplicate, Reorder): a rehearsal of gaps.
type faults struct {
	rng                *rand.Rand
	loss, dup, reorder float64
	hold               []inItem // to deliver before the next one
	delayed            *inItem  // to deliver after the next one
}

// apply decides the fate of it: delivered now (true), or later, or
// never (false).
func (f *faults) apply(it inItem) (inItem, bool) {
	if f.rng.Float64() < f.loss {
		return inItem{}, false
	}
	if f.rng.Float64() < f.dup {
		f.hold = append(f.hold, it)
	}
	if f.delayed == nil && f.rng.Float64() < f.reorder {
		f.delayed = &it
		return inItem{}, false
	}
	if d := f.delayed; d != nil {
		f.delayed = nil
		f.hold = append(f.hold, *d)
	}
	return it, true
}

// held returns a message held back earlier.
func (f *faults) held() (inItem, bool) {
	if len(f.hold) == 0 {
		return inItem{}, false
	}
	it := f.hold[0]
	f.hold = f.hold[1:]
	return it, true
}
