package multicast

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport/latency"
)

// BenchmarkLatencySender splits BenchmarkLatency's one-way latency at
// the kernel: the same two sender processes (our publisher, raw UDP with
// one message a datagram), each at the rate open loop, in interleaved
// rounds, are read by one plain socket in the group with kernel receive
// timestamps (SO_TIMESTAMPNS). For each message it records the time
// from its schedule to the kernel's timestamp (the sender's part: its
// process, the send system call, loopback) and the time from that
// timestamp to the read's return (a Go receiver's wake-up, the same
// code for both). What BenchmarkLatency adds beyond these is the
// subscriber's own work after its read.
//
//	go test -run XXX -bench LatencySender -benchtime 20000x ./multicast/
//
// BROKERLESS_LATENCY_RATES as for BenchmarkLatency.
func BenchmarkLatencySender(b *testing.B) { perRate(b, benchLatencySender) }

func benchLatencySender(b *testing.B, rate int) {
	if b.N < 1000 {
		return // the testing package's first, calibration call
	}
	var ours, raw, oursWake, rawWake, x []float64
	for round := range latencyRounds {
		kinds := []string{"raw", "mcast"}
		if round%2 == 1 {
			kinds = []string{"mcast", "raw"}
		}
		sides := map[string][2]*latency.Histogram{}
		for _, kind := range kinds {
			send, wake := kernelSplit(b, kind, b.N, rate)
			sides[kind] = [2]*latency.Histogram{send, wake}
		}
		o, r := sides["mcast"], sides["raw"]
		ours, raw = append(ours, us(o[0].Quantile(0.5))), append(raw, us(r[0].Quantile(0.5)))
		oursWake, rawWake = append(oursWake, us(o[1].Quantile(0.5))), append(rawWake, us(r[1].Quantile(0.5)))
		x = append(x, ours[round]/raw[round])
		b.Logf("round %d: schedule→kernel p50 %v p99 %v, kernel→read p50 %v (%d msgs); raw UDP schedule→kernel p50 %v p99 %v, kernel→read p50 %v (%d msgs); sender p50 %.2f× raw",
			round+1, o[0].Quantile(0.5), o[0].Quantile(0.99), o[1].Quantile(0.5), o[0].Count(),
			r[0].Quantile(0.5), r[0].Quantile(0.99), r[1].Quantile(0.5), r[0].Count(), x[round])
	}
	b.ReportMetric(median(ours), "send-p50-µs")
	b.ReportMetric(median(raw), "raw-send-p50-µs")
	reportSpread(b, x, "send-p50-x-raw")
	b.ReportMetric(median(oursWake), "wake-p50-µs")
	b.ReportMetric(median(rawWake), "raw-wake-p50-µs")
	b.ReportMetric(0, "ns/op")
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// kernelSplit runs the sender process of kind for n messages at rate and
// reads its datagrams with kernel timestamps: it returns, per message,
// schedule→kernel and kernel→read.
func kernelSplit(b *testing.B, kind string, n, rate int) (send, wake *latency.Histogram) {
	cfg := testConfig(b)
	rc := rawReceiver(b, cfg)
	bufferSizes(rc, DefaultSocketBytes, 0, cfg.Logger)
	sc, err := rc.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil || serr != nil {
		b.Skipf("no SO_TIMESTAMPNS: %v %v", err, serr)
	}
	exited := make(chan struct{})
	stop := startSender(b, kind, cfg, n, rate, exited)
	defer stop()
	send, wake = latency.New(), latency.New()
	buf, oob := make([]byte, maxDatagram), make([]byte, unix.CmsgSpace(16))
	var frames []reliable.Frame
	for int(send.Count()) < n {
		_ = rc.SetReadDeadline(time.Now().Add(latencyIdle))
		k, oobn, _, _, err := rc.ReadMsgUDPAddrPort(buf, oob)
		now := time.Now()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			select {
			case <-exited:
				return send, wake // the rest was dropped
			default:
				continue
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		at, ok := kernelTime(oob[:oobn])
		if !ok {
			b.Fatal("a datagram without its kernel timestamp")
		}
		record := func(scheduled int64) {
			send.Record(at.Sub(time.Unix(0, scheduled)))
			wake.Record(now.Sub(at))
		}
		if kind == "raw" {
			if k == benchPayload {
				record(int64(binary.BigEndian.Uint64(buf)))
			}
			continue
		}
		if h, err := reliable.ParseHeader(buf[:k]); err != nil || h.Type != reliable.TypeData {
			continue // a heartbeat
		}
		var dh reliable.DataHead
		if dh, frames, err = reliable.ParseData(buf[:k], frames); err != nil || dh.Repair {
			continue
		}
		for i := range frames {
			if frames[i].Begin() {
				record(frames[i].Time) // the sender publishes with Time: the schedule
			}
		}
	}
	return send, wake
}

// kernelTime returns the SO_TIMESTAMPNS in the control messages oob.
func kernelTime(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			sec, nsec := int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}
