package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/multicast"
)

// startTestLogd runs logd until the test ends and returns its Kafka
// address.
func startTestLogd(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr, _, done := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	t.Cleanup(func() { stopLogd(t, cancel, done) })
	return addr
}

// TestBadURLs: an unknown scheme, a missing topic, a group that is not
// multicast, a bad or unknown parameter, a flag a transport cannot honour:
// each is one line of error and exit status 2, before anything starts.
func TestBadURLs(t *testing.T) {
	const good = "mcast://239.255.1.2:7000?ttl=0"
	cases := []struct {
		url  string
		want string
	}{
		{"nope://239.1.2.3:7000", `bad URL "nope://239.1.2.3:7000": unknown scheme "nope" (registered: kafka, logd, mcast, zmq+ipc, zmq+tcp)`},
		{"239.1.2.3:7000", `bad URL "239.1.2.3:7000": `},
		{"logd://127.0.0.1:9092/", `bad URL "logd://127.0.0.1:9092/": path "/" must be one topic`},
		{"logd://127.0.0.1:9092", `bad URL "logd://127.0.0.1:9092": path "" must be one topic`},
		{"mcast://10.0.0.1:7000", `bad URL "mcast://10.0.0.1:7000": group 10.0.0.1 is not a multicast address`},
		{"mcast://239.1.2.3", `bad URL "mcast://239.1.2.3": group "239.1.2.3"`},
		{"mcast://239.1.2.3:7000?ttl=x", `bad URL "mcast://239.1.2.3:7000?ttl=x": ttl="x"`},
		{"mcast://239.1.2.3:7000?ttl=300", `bad URL "mcast://239.1.2.3:7000?ttl=300": ttl="300"`},
		{"mcast://239.1.2.3:7000?colour=red", `unknown parameter "colour" (mcast:// takes iface, feed,`},
		{"mcast://239.1.2.3:7000?iface=nosuch0", `bad URL "mcast://239.1.2.3:7000?iface=nosuch0": iface="nosuch0": no such network interface`},
		{"logd://127.0.0.1:9092/t?acks=2", `bad URL "logd://127.0.0.1:9092/t?acks=2": acks="2": want all or leader`},
		{"logd://127.0.0.1/t", `bad URL "logd://127.0.0.1/t": broker "127.0.0.1": want HOST:PORT, e.g. 127.0.0.1:9092`},
		{"kafka://127.0.0.1:0/t", `bad URL "kafka://127.0.0.1:0/t": broker "127.0.0.1:0": want a port from 1 to 65535`},
		{"logd://u:p@127.0.0.1:9092/t", `bad URL "logd://u:p@127.0.0.1:9092/t": logd:// takes no user`},
		{"zmq+tcp://127.0.0.1:70000", `bad URL "zmq+tcp://127.0.0.1:70000": "127.0.0.1:70000": port must be 0..65535`},
		{"logd://127.0.0.1:9092/bad%20topic", `bad URL "logd://127.0.0.1:9092/bad%20topic": topic "bad topic": want 1 to 249 of the characters a-z A-Z 0-9 . _ -`},
	}
	var runs [][]string
	for _, c := range cases {
		runs = append(runs,
			[]string{c.want, "pub", c.url},
			[]string{c.want, "sub", c.url},
			[]string{c.want, "pipe", c.url, good},
			[]string{c.want, "pipe", good, c.url})
	}
	runs = append(runs,
		[]string{"--from: mcast:// cannot replay", "sub", good, "--from", "earliest"},
		[]string{"--group: mcast:// has no consumer groups", "sub", good, "--group", "g"},
		[]string{`bad URL "logd://127.0.0.1:9092/t?from=soon": from="soon": want earliest, latest, an offset or an RFC 3339 time`, "sub", "logd://127.0.0.1:9092/t", "--from", "soon"},
		[]string{"--from and the URL's from= both given", "sub", "logd://127.0.0.1:9092/t?from=1", "--from", "2"},
	)
	for _, r := range runs {
		want, args := r[0], r[1:]
		code, out, errOut := runCLI(t, "", args...)
		if code != exitUsage || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want exit 2 and nothing on stdout", args, code, out)
		}
		if n := strings.Count(errOut, "\n"); n != 1 || !strings.Contains(errOut, want) || !strings.HasPrefix(errOut, "brokerless "+args[0]+": ") {
			t.Errorf("%q: stderr (%d lines)\n%s\nwant one line with %q", args, n, errOut, want)
		}
	}
}

func TestPubSubLogd(t *testing.T) {
	addr := startTestLogd(t)
	url := "logd://" + addr + "/greet"
	code, _, errOut := runCLI(t, "hello\nworld\nbye\n", "pub", url)
	if code != exitOK || !strings.Contains(errOut, "publishing to "+url+" (ordered|") || !strings.Contains(errOut, "published 3 messages") {
		t.Fatalf("pub: exit %d:\n%s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--count", "3"}, "0 greet hello\n1 greet world\n2 greet bye\n"},
		{[]string{"--from", "1", "--count", "2"}, "1 greet world\n2 greet bye\n"},
		{[]string{"--from", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--duration", "300ms"}, ""},
		{[]string{"--group", "g", "--count", "2"}, "0 greet hello\n1 greet world\n"},
		{[]string{"--group", "g", "--count", "1"}, "2 greet bye\n"},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"sub", url}, c.args...)...)
		if code != exitOK || out != c.want {
			t.Errorf("sub %v: exit %d, printed %q, want %q:\n%s", c.args, code, out, c.want, errOut)
		}
	}
	code, out, errOut := runCLI(t, "", "sub", url, "--stats", "--interval", "1h", "--count", "3")
	if code != exitOK || out != "" || !strings.Contains(errOut, "received 3 messages; gaps 0 (0 lost)") {
		t.Errorf("sub --stats: exit %d, stdout %q:\n%s", code, out, errOut)
	}
}

// TestPubSubMcastURL: pub and sub take mcast:// URLs as mcast pub and
// mcast sub take flags.
func TestPubSubMcastURL(t *testing.T) {
	g := testGroup()
	url := fmt.Sprintf("mcast://%s?ttl=0&feed=3", g)
	out, errOut := newSyncBuffer(""), newSyncBuffer("listening on")
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), []string{"sub", url, "--until-end"}, stdio{in: strings.NewReader(""), out: out, err: errOut})
	}()
	select {
	case <-errOut.seen:
	case <-time.After(10 * time.Second):
		t.Fatalf("sub did not start:\n%s", errOut)
	}
	pubCode, _, pubErr := runCLI(t, "one\ntwo\n", "pub", url, "--topic", "t")
	if pubCode != exitOK || !strings.Contains(pubErr, "publishing to "+url+" from 127.0.0.1:") || !strings.Contains(pubErr, "published 2 messages in ") {
		t.Fatalf("pub exit %d:\n%s", pubCode, pubErr)
	}
	if c := waitExit(t, code, errOut); c != exitOK || out.String() != "1 t one\n2 t two\n" {
		t.Fatalf("sub exit %d, printed %q:\n%s", c, out, errOut)
	}
	for _, w := range []string{"listening on " + url + " (ordered|gap-reports|retransmit", "stream start 3/", "received 2 messages; recovered 0"} {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("sub stderr lacks %q:\n%s", w, errOut)
		}
	}
}

// TestHelpURLs: every registered scheme is described with every
// parameter its URLs take.
func TestHelpURLs(t *testing.T) {
	code, out, _ := runCLI(t, "", "help", "urls")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"mcast:// — UDP multicast", "Semantics: ordered|gap-reports|retransmit", "join=live|earliest", "As the FROM of a pipe, unless the URL says otherwise: join=earliest",
		"logd:// — a topic of logd", "from=earliest|latest|OFFSET|TIME", "group=NAME", "acks=all|leader",
		"kafka:// — a topic of any Kafka-protocol broker",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help urls lacks %q:\n%s", want, out)
		}
	}
}

// TestPipeLogdToLogd: a pipe from a consumer group of one topic into
// another copies every record once, with its origin, acknowledging what
// the destination accepted: run again, it finds nothing left to copy.
func TestPipeLogdToLogd(t *testing.T) {
	addr := startTestLogd(t)
	src, dst := "logd://"+addr+"/src", "logd://"+addr+"/dst"
	var in strings.Builder
	for i := range 500 {
		fmt.Fprintf(&in, "job %d\n", i)
	}
	if code, _, errOut := runCLI(t, in.String(), "pub", src, "--topic", "src"); code != exitOK {
		t.Fatalf("pub: exit %d:\n%s", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errOut := newSyncBuffer("")
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"pipe", src + "?group=mirror", dst}, stdio{in: strings.NewReader(""), out: io.Discard, err: errOut})
	}()
	waitWritten(t, addr, "dst", 499) // the last record's origin offset
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("pipe: exit %d:\n%s", code, errOut)
	}
	for _, w := range []string{"acknowledged once", "forwarded 500 messages, 0 gap markers", "500 accepted, 0 in flight"} {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("pipe stderr lacks %q:\n%s", w, errOut)
		}
	}
	recs := readTopic(t, addr, "dst")
	if len(recs) != 500 {
		t.Fatalf("%d records copied, want 500", len(recs))
	}
	for i, r := range recs {
		if r.marker || r.seq != uint64(i) {
			t.Fatalf("record %d: %+v, want origin offset %d", i, r, i)
		}
	}
	code, _, again := runCLI(t, "", "pipe", src+"?group=mirror", dst, "--duration", "1s")
	if code != exitOK || !strings.Contains(again, "forwarded 0 messages") {
		t.Errorf("the pipe run again: exit %d:\n%s", code, again)
	}
}

// TestPubBadMessageTopic: a --topic Kafka would refuse fails the first
// publish.
func TestPubBadMessageTopic(t *testing.T) {
	addr := startTestLogd(t)
	code, _, errOut := runCLI(t, "hello\n", "pub", "logd://"+addr+"/t", "--topic", "bad topic")
	if code != exitFailure || !strings.Contains(errOut, "gave 0 messages to the publisher, which failed") || !strings.Contains(errOut, `a message's topic "bad topic": want 1 to 249`) {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
}

// TestPubUnacknowledged: messages the broker refused are not reported as
// published.
func TestPubUnacknowledged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr, _, done := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auto-create=false")
	defer stopLogd(t, cancel, done)
	code, _, errOut := runCLI(t, "a\nb\n", "pub", "logd://"+addr+"/nosuch")
	if code != exitFailure || strings.Contains(errOut, "published 2 messages") ||
		!strings.Contains(errOut, "gave 2 messages to the publisher, which failed: not all of them are known to be delivered\n") ||
		!strings.Contains(errOut, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
}

// TestPipeIntoItself: a pipe whose TO is its FROM would copy what it
// writes without end: refused, one line, exit 2. Places that only look
// alike are not.
func TestPipeIntoItself(t *testing.T) {
	for _, c := range [][2]string{
		{"logd://127.0.0.1:1/t", "logd://127.0.0.1:1/t"},
		{"logd://127.0.0.1:1,127.0.0.1:2/t?group=g", "kafka://127.0.0.1:2,127.0.0.1:1/t?acks=leader"},
		{"logd://127.0.0.1:1/t", "logd://127.0.0.1:1/t?partition=3"},
		{"mcast://239.255.1.2:7000?ttl=0", "mcast://239.255.1.2:7000?feed=1&ttl=0"},
		{"zmq+tcp://127.0.0.1:5556", "zmq+tcp://127.0.0.1:5556"},
		{"zmq+ipc:///tmp/x.sock", "zmq+ipc:///tmp/x.sock?pack=on"},
	} {
		// A pipe that starts instead of refusing is stopped after a
		// while.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var stdout, stderr strings.Builder
		code := run(ctx, []string{"pipe", c[0], c[1]}, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr})
		cancel()
		out, errOut := stdout.String(), stderr.String()
		want := fmt.Sprintf("brokerless pipe: FROM and TO are the same place (%s, %s): the pipe would read back what it writes, without end\n", c[0], c[1])
		if code != exitUsage || out != "" || errOut != want {
			t.Errorf("pipe %s %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", c[0], c[1], code, out, errOut, want)
		}
	}
	for _, c := range [][2]string{
		{"logd://127.0.0.1:1/t", "logd://127.0.0.1:1/u"},
		{"logd://127.0.0.1:1/t?partition=0", "logd://127.0.0.1:1/t?partition=1"},
		{"logd://127.0.0.1:1/t", "logd://127.0.0.1:2/t"},
		{"mcast://239.255.1.2:7000?ttl=0", "mcast://239.255.1.2:7000?feed=2&ttl=0"},
		{"mcast://239.255.1.2:7000", "mcast://239.255.1.2:7001"},
		{"zmq+tcp://127.0.0.1:5556", "zmq+tcp://127.0.0.1:5557"},
	} {
		if pipeLoop(c[0], c[1]) {
			t.Errorf("pipe %s %s: seen as a loop", c[0], c[1])
		}
	}
}

// TestPipeLoopSpellings: two spellings of one place are one place: the
// default parameters given or not, a host name in another case, a port
// with a leading zero, an IPv6 address written out.
func TestPipeLoopSpellings(t *testing.T) {
	for _, c := range [][2]string{
		{"logd://LocalHost:9092/t", "kafka://localhost:09092/t?from=earliest&acks=all"},
		{"logd://127.0.0.1:9092,127.0.0.2:9092/t", "logd://127.0.0.2:09092,127.0.0.1:9092,127.0.0.1:9092/t?partition=0"},
		{"logd://[::1]:9092/t", "logd://[0:0:0:0:0:0:0:1]:9092/t"},
		{"logd://broker.example.:9092/t", "logd://Broker.Example:9092/t"},
		{"mcast://239.255.1.2:7000", "mcast://239.255.1.2:07000?feed=01&iface=" + multicast.DefaultInterface},
		{"zmq+tcp://LOCALHOST:5556", "zmq+tcp://localhost:05556?mode=bind"},
		{"zmq+tcp://[::1]:5556", "zmq+tcp://[0::1]:5556"},
		{"zmq+ipc:///tmp/x.sock", "zmq+ipc:///tmp//x.sock"},
	} {
		if !pipeLoop(c[0], c[1]) {
			t.Errorf("pipe %s %s: not seen as a loop", c[0], c[1])
		}
	}
	for _, c := range [][2]string{
		{"logd://127.0.0.1:9092/t", "logd://127.0.0.1:9092/T"}, // topics are case-sensitive
		{"mcast://239.255.1.2:7000", "mcast://239.255.1.2:7000?feed=2"},
		{"mcast://239.255.1.2:7000", "mcast://239.255.1.2:7000?iface=eth0"},
		{"zmq+ipc:///tmp/x.sock", "zmq+ipc:///tmp/X.sock"},
	} {
		if pipeLoop(c[0], c[1]) {
			t.Errorf("pipe %s %s: seen as a loop", c[0], c[1])
		}
	}
}
