//go:build !linux

package storage

func evict([]string) {}

func evictable(string) bool { return false }
