//go:build !unix

package pipe_test

// settleDisk does nothing where sync(2) is not at hand.
func settleDisk() {}
