package logd

import "sync/atomic"

// maxFetchFilesPerConn bounds the segment file descriptors one
// connection's Fetch answers hold (dup'd to be sent with sendfile) until
// they are written.
const maxFetchFilesPerConn = 16

// fetchFiles counts the segment file descriptors a connection's Fetch
// answers hold until written: at most maxFetchFilesPerConn, and
// Config.MaxFetchFiles over all connections. Past either bound a record
// set is read and copied instead (counted), so a client that does not
// read its answers pins few descriptors, for up to IdleTimeout.
type fetchFiles struct {
	all   *atomic.Int64 // the server's count
	limit int64         // Config.MaxFetchFiles
	conn  atomic.Int64
}

// take reserves one descriptor; false when a bound is reached.
func (f *fetchFiles) take() bool {
	if f == nil || f.all == nil {
		return false
	}
	if f.conn.Add(1) > maxFetchFilesPerConn {
		f.conn.Add(-1)
		return false
	}
	if f.all.Add(1) > f.limit {
		f.all.Add(-1)
		f.conn.Add(-1)
		return false
	}
	return true
}

// put gives back n descriptors, closed.
func (f *fetchFiles) put(n int) {
	if f != nil && n > 0 {
		f.conn.Add(int64(-n))
		f.all.Add(int64(-n))
	}
}
