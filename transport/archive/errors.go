package archive

import "errors"

var (
	// ErrNoStream is returned by Reader.Seek when the log has several
	// streams (partitions) and none of them holds a record of the feed:
	// the one to read must be named (a logd:// URL's partition=).
	ErrNoStream = errors.New("archive: no stream of the log holds the feed")
	// ErrEmpty is returned by Reader.Seek when the log holds no stream
	// yet (its topic does not exist): nothing was recorded.
	ErrEmpty = errors.New("archive: the log does not exist yet")
	// ErrNotPositioned is returned by Reader.Next before a Seek
	// positioned the reader.
	ErrNotPositioned = errors.New("archive: Next before Seek")
)
