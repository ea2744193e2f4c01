package statsd

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// dropReader sums the kernel's receive drops of our UDP sockets, read
// from the drops column of /proc/net/udp and /proc/net/udp6 by socket
// inode, and reports them as a delta between two reads.
type dropReader struct {
	inodes map[uint64]bool
	last   uint64
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
	if len(d.inodes) == 0 {
		return 0
	}
	total := udpDrops(func(_ []byte, inode uint64) bool { return d.inodes[inode] })
	delta := total - d.last
	if total < d.last {
		delta = 0
	}
	d.last = total
	return delta
}

// PortDrops sums the kernel's receive drops of every UDP socket bound to
// a local port: a way to read another process's drops (the benchmark
// reads Etsy statsd's).
func PortDrops(port int) uint64 {
	suffix := fmt.Appendf(nil, ":%04X", port)
	return udpDrops(func(local []byte, _ uint64) bool { return bytes.HasSuffix(local, suffix) })
}

// udpDrops sums the drops column of /proc/net/udp and /proc/net/udp6
// over the sockets match selects by local address and inode. Missing
// files count 0.
func udpDrops(match func(local []byte, inode uint64) bool) uint64 {
	var total uint64
	for _, file := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
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
			if drops, err := strconv.ParseUint(string(fields[12]), 10, 64); err == nil {
				total += drops
			}
		}
		f.Close()
	}
	return total
}
