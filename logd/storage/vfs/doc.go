// Package vfs is the file layer under logd's storage: the few file
// operations it uses, behind an interface, so tests can put a disk that
// fails or loses power under a Store.
//
// [OS] is the real file system, where [File.Sync] is fdatasync(2).
// [Lazy] is an in-memory file system that keeps what was written apart
// from what a completed Sync (fdatasync) or SyncDir made durable, as
// LazyFS does for Jepsen: [Lazy.Crash] is a power loss, after which only
// durable data and directory entries remain. [Faults] wraps another FS
// and fails the operations a rule picks (a full disk, an I/O error).
package vfs
