package logd

import (
	"fmt"
	"time"

	"github.com/brokerless/brokerless/transport/latency"
)

// diskStats is what the machine's disks have done since boot.
type diskStats struct {
	reads, readBytes, busyMs int64
}

// diskWatch measures what the disks did while one side of a benchmark
// ran, so a round can show that both sides read the same bytes from the
// device and how busy each kept it.
type diskWatch struct {
	start    time.Time
	disk     diskStats
	reported int64
	ok, vm   bool
}

func watchDisk() diskWatch {
	w := diskWatch{start: time.Now()}
	w.disk, w.ok = readDiskStats()
	w.reported, w.vm = latency.ReportedKiB()
	return w
}

// diskUse is a diskWatch's result.
type diskUse struct {
	perByte   float64 // bytes read from the device per byte delivered
	readKiB   float64 // the device's mean read size
	busy      float64 // the share of the time the device was busy
	vmFreeMiB int64   // memory reported free to the hypervisor meanwhile
	ok, vm    bool
}

// done ends the watch of a side that delivered bytes.
func (w diskWatch) done(bytes float64) diskUse {
	elapsed := time.Since(w.start)
	u := diskUse{ok: w.ok, vm: w.vm}
	if d, ok := readDiskStats(); w.ok && ok {
		read := float64(d.readBytes - w.disk.readBytes)
		u.perByte = read / bytes
		u.readKiB = read / 1024 / float64(max(d.reads-w.disk.reads, 1))
		u.busy = float64(d.busyMs-w.disk.busyMs) / float64(elapsed.Milliseconds()+1)
	}
	if r, ok := latency.ReportedKiB(); w.vm && ok {
		u.vmFreeMiB = (r - w.reported) >> 10
	}
	return u
}

func (u diskUse) String() string {
	if !u.ok {
		return "disk not measured"
	}
	s := fmt.Sprintf("disk read %.2f B/B in %.0f KiB reads, busy %.0f%%", u.perByte, u.readKiB, 100*u.busy)
	if u.vm {
		s += fmt.Sprintf(", %d MiB reported free to the hypervisor", u.vmFreeMiB)
	}
	return s
}
