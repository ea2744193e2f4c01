package statsd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
)

// dropReader sums the kernel's receive drops of our UDP sockets, read
// from the drops column of /proc/net/udp and /proc/net/udp6 by socket
// inode, and reports them as a delta between two reads.
type dropReader struct {
	// inodes are set while the server opens its listeners, before any
	// read; mu guards the rest (a flush and Close read).
	inodes map[uint64]bool
	mu     sync.Mutex
	// last is each socket's counter at its last reading: none before
	// the first, as our sockets counted from 0 when opened. Its keys
	// are among inodes: it grows no further.
	last DropCounts
	// held are drops read by hold, not yet reported.
	held uint64
}

func (d *dropReader) add(inode uint64) {
	if inode == 0 {
		return
	}
	if d.inodes == nil {
		d.inodes = make(map[uint64]bool)
	}
	d.inodes[inode] = true
}

// delta returns the drops since the previous call.
func (d *dropReader) delta() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.held + d.read()
	d.held = 0
	return n
}

// hold reads the counters now and keeps the drops since the last read
// for the next delta: Close calls it before it closes the sockets,
// which then leave the table, so that the final flush reports the
// drops of its interval.
func (d *dropReader) hold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held += d.read()
}

// read returns the drops since the last read.
func (d *dropReader) read() uint64 {
	if len(d.inodes) == 0 {
		return 0
	}
	readings := make(DropCounts, len(d.inodes))
	udpDrops(func(_ []byte, inode uint64) bool { return d.inodes[inode] },
		func(inode uint64, drops uint32) { readings[inode] = drops })
	return d.update(readings)
}

// update takes the drops counter of each socket, by inode, and returns
// the drops since the previous update (DropCounts.Since: each socket's
// reading less its last one modulo 2^32). A socket missing
// from readings (the table could not be read) keeps its last reading,
// so that the next one does not count its drops again.
func (d *dropReader) update(readings DropCounts) uint64 {
	if d.last == nil {
		d.last = make(DropCounts, len(readings))
	}
	delta := readings.Since(d.last)
	for inode, v := range readings {
		d.last[inode] = v
	}
	return delta
}

// DropCounts are the kernel's receive drops counters of UDP sockets,
// by socket inode, as PortDrops reads them.
type DropCounts map[uint64]uint32

// PortDrops reads the kernel's receive drops counter of every UDP
// socket bound to a local port: a way to read another process's drops
// (the benchmark reads Etsy statsd's). Since counts the drops between
// two readings.
func PortDrops(port int) DropCounts {
	suffix := fmt.Appendf(nil, ":%04X", port)
	c := make(DropCounts)
	udpDrops(func(local []byte, _ uint64) bool { return bytes.HasSuffix(local, suffix) },
		func(inode uint64, drops uint32) { c[inode] = drops })
	return c
}

// Since returns the datagrams dropped between earlier and c: each
// socket's counter less its earlier reading, modulo 2^32 (the kernel's
// counter is 32 bits and wraps), summed. A socket missing from earlier
// opened since, so all its drops count; one missing from c closed, and
// its drops before earlier were counted then. Right as long as no
// socket drops 2^32 datagrams between the readings.
func (c DropCounts) Since(earlier DropCounts) uint64 {
	var delta uint64
	for inode, v := range c {
		delta += uint64(v - earlier[inode])
	}
	return delta
}

// udpDrops reads /proc/net/udp and /proc/net/udp6 (scanUDPDrops).
// Missing files are skipped.
func udpDrops(match func(local []byte, inode uint64) bool, fn func(inode uint64, drops uint32)) {
	for _, file := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		scanUDPDrops(f, match, fn)
		f.Close()
	}
}

// scanUDPDrops calls fn with the inode and the drops column of each
// socket of a /proc/net/udp table that match selects by local address
// and inode.
func scanUDPDrops(r io.Reader, match func(local []byte, inode uint64) bool, fn func(inode uint64, drops uint32)) {
	sc := bufio.NewScanner(r)
	sc.Scan() // header
	for sc.Scan() {
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 13 {
			continue
		}
		inode, err := strconv.ParseUint(string(fields[9]), 10, 64)
		if err != nil || !match(fields[1], inode) {
			continue
		}
		// The counter's 32 bits: some kernels print it with %d,
		// negative past 2^31-1.
		if drops, err := strconv.ParseInt(string(fields[12]), 10, 64); err == nil {
			fn(inode, uint32(drops))
		}
	}
}
