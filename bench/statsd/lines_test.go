package statsd

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	datadog "github.com/DataDog/datadog-go/v5/statsd"
	brokerless "github.com/brokerless/brokerless/statsd"
	cactus "github.com/cactus/go-statsd-client/v5/statsd"
)

// The benchmarks compare like with like: configured as the benchmarks
// configure them, the three clients put the same lines on the wire for
// the benchmarks' operations (a timer with tags; counter increments,
// which brokerless and datadog-go sum in the client).
func TestClientsSendTheSameLines(t *testing.T) {
	send := map[string]func(addr string) error{
		"brokerless": func(addr string) error {
			c, err := brokerless.NewClient(context.Background(), brokerless.ClientConfig{Addr: addr})
			if err != nil {
				return err
			}
			c.Timing("http.latency", latency, "route:/api", "code:200")
			c.Incr("http.requests")
			c.Incr("http.requests")
			return c.Close()
		},
		"datadog": func(addr string) error {
			c, err := datadog.New(addr)
			if err != nil {
				return err
			}
			c.Timing("http.latency", latency, []string{"route:/api", "code:200"}, 1)
			c.Incr("http.requests", nil, 1)
			c.Incr("http.requests", nil, 1)
			return c.Close()
		},
		"cactus": func(addr string) error {
			c, err := cactus.NewClientWithConfig(&cactus.ClientConfig{Address: addr, UseBuffered: true, TagFormat: cactus.SuffixOctothorpe})
			if err != nil {
				return err
			}
			c.TimingDuration("http.latency", latency, 1, cactus.Tag{"route", "/api"}, cactus.Tag{"code", "200"})
			c.Inc("http.requests", 1, 1)
			c.Inc("http.requests", 1, 1)
			return c.Close()
		},
	}
	for name, f := range send {
		t.Run(name, func(t *testing.T) {
			conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := f(conn.LocalAddr().String()); err != nil {
				t.Fatal(err)
			}
			const timer = "http.latency:1.234567|ms|#route:/api,code:200"
			var lines []string
			timers, counted := 0, 0
			buf := make([]byte, 65536)
			for timers < 1 || counted < 2 {
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := conn.Read(buf)
				if err != nil {
					t.Fatalf("got %q, want %q and 2 counter increments: %v", lines, timer, err)
				}
				for _, l := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\n"), "\n") {
					lines = append(lines, l)
					switch l {
					case timer:
						timers++
					case "http.requests:1|c":
						counted++
					case "http.requests:2|c":
						counted += 2
					default:
						t.Fatalf("unexpected line %q (want %q and 2 counter increments)", l, timer)
					}
				}
			}
			if timers != 1 || counted != 2 {
				t.Fatalf("lines %q, want %q once and 2 counter increments", lines, timer)
			}
		})
	}
}
