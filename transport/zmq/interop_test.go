package zmq

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/peertest"
)

// needPyzmq returns Debian's interpreter once it imports python3-zmq
// (pyzmq on libzmq 4.3), and logs libzmq's version; the test skips
// without it, unless BROKERLESS_INTEROP=1, where it fails.
func needPyzmq(t *testing.T) string {
	t.Helper()
	python := peertest.PythonModule(t, "zmq", "apt-get install python3-zmq (.ci/install.d/50-zmq.sh)")
	out, err := exec.Command(python, "-I", "-c", "import zmq; print(zmq.zmq_version())").CombinedOutput()
	if err != nil {
		t.Fatalf("python3-zmq imports but zmq.zmq_version() fails: %v: %s", err, bytes.TrimSpace(out))
	}
	t.Logf("libzmq %s (python3-zmq)", bytes.TrimSpace(out))
	return python
}

// pyPeer is a running testdata/pyzmq_peer.py.
type pyPeer struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan map[string]any
	stdin  io.WriteCloser
	stderr *lockedBuffer
	done   chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startPy runs the peer in mode with args; it is killed at cleanup.
func startPy(t *testing.T, args ...string) *pyPeer {
	t.Helper()
	cmd := exec.Command(needPyzmq(t), append([]string{"-I", "testdata/pyzmq_peer.py"}, args...)...)
	p := &pyPeer{t: t, cmd: cmd, lines: make(chan map[string]any, 1024), stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("python peer printed %q: %v", sc.Text(), err)
				continue
			}
			p.lines <- m
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		p.cmd.Process.Kill()
		<-p.done
		p.cmd.Wait()
	})
	return p
}

// next returns the peer's next line, failing the test if it exits or
// says nothing for a while.
func (p *pyPeer) next() map[string]any {
	p.t.Helper()
	return p.nextWithin(testTimeout)
}

// nextWithin is next, failing the test if the peer says nothing for d.
func (p *pyPeer) nextWithin(d time.Duration) map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.lines:
		if !ok {
			p.cmd.Wait()
			p.t.Fatalf("python peer %v ended: %s", p.cmd.Args[2:], p.stderr)
		}
		return m
	case <-time.After(d):
		p.t.Fatalf("python peer %v silent for %v: %s", p.cmd.Args[2:], d.Round(time.Millisecond), p.stderr)
	}
	return nil
}

// wait waits for the peer to exit and fails the test if it failed.
func (p *pyPeer) wait() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(testTimeout):
		p.t.Fatalf("python peer %v still running: %s", p.cmd.Args[2:], p.stderr)
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("python peer %v: %v: %s", p.cmd.Args[2:], err, p.stderr)
	}
}

// TestInteropPubToPyzmqSub: our PUB, a libzmq SUB subscribed to two of
// three topics' prefixes: it gets exactly those, each topic a stream of
// its own numbered from 1, readable from the header frame.
func TestInteropPubToPyzmqSub(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, Config{})
	py := startPy(t, "sub", ep, "20", "a.", "c.")
	py.next() // ready
	for _, topic := range []string{"a.x", "c.x"} {
		if err := pub.WaitSubscribers(ctx, topic, 1); err != nil {
			t.Fatalf("libzmq's subscription to %s never arrived: %v", topic, err)
		}
	}
	for i := range 30 {
		topic := []string{"a.x", "b.x", "c.x"}[i%3]
		if err := pub.Publish(ctx, transport.Message{Topic: topic, Payload: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	sessions := map[string]float64{}
	seqs := map[string]float64{}
	for range 20 {
		m := py.next()
		topic := m["topic"].(string)
		if topic == "b.x" {
			t.Fatalf("libzmq SUB got %v: not subscribed", m)
		}
		seqs[topic]++
		i := map[string]int{"a.x": 0, "c.x": 2}[topic] + 3*int(seqs[topic]-1)
		if m["seq"] != seqs[topic] || m["payload"] != strconv.Itoa(i) || m["kind"] != float64(kindMessage) || m["feed"] != float64(ProcessFeed) {
			t.Fatalf("libzmq SUB got %v, want %s seq %v payload %d", m, topic, seqs[topic], i)
		}
		if s, ok := sessions[topic]; ok && s != m["session"] {
			t.Fatalf("%s changed session: %v", topic, m)
		}
		sessions[topic] = m["session"].(float64)
	}
	py.wait()
	if sessions["a.x"] == sessions["c.x"] {
		t.Errorf("topics a.x and c.x share session %v: each topic is a stream", sessions["a.x"])
	}
}

// TestInteropPyzmqPubToSub: a libzmq publisher sends two-frame messages
// with no header frame; our SUB takes the two subscribed prefixes only,
// and numbers what arrives under feed 0.
func TestInteropPyzmqPubToSub(t *testing.T) {
	py := startPy(t, "pub", "30", "a.", "c.")
	ep := py.next()["endpoint"].(string)
	sub := connected(t, ep, Config{Subscribe: []string{"a.", "c."}})
	var want []string
	for i := range 30 {
		if i%3 != 2 { // topics a.x, c.x, other
			want = append(want, strconv.Itoa(i))
		}
	}
	var stream transport.StreamID
	for k, payload := range want {
		m := nextMessage(t, sub)
		topic := map[bool]string{true: "a.x", false: "c.x"}[k%2 == 0]
		if m.Topic != topic || string(m.Payload) != payload || m.Seq != uint64(k+1) || m.Stream.Feed != 0 || m.Stream.Session == 0 {
			t.Fatalf("message %d: got %q %q stream %v seq %d, want %s %s feed 0 seq %d", k, m.Topic, m.Payload, m.Stream, m.Seq, topic, payload, k+1)
		}
		if k > 0 && m.Stream != stream {
			t.Fatalf("one connection's messages came from %v and %v", stream, m.Stream)
		}
		stream = m.Stream
	}
	if got := py.next()["sent"]; got != float64(30) {
		t.Fatalf("python peer says sent %v", got)
	}
	if st := sub.Stats(); st.Plain != uint64(len(want)) {
		t.Errorf("Stats.Plain %d, want %d", st.Plain, len(want))
	}
}

// TestInteropProxy: our forwarder between a libzmq publisher and a
// libzmq subscriber: a subscription the subscriber makes after
// start-up, and an unsubscription, reach the publisher.
func TestInteropProxy(t *testing.T) {
	px, xsub, xpub := startProxy(t, Config{})
	py := startPy(t, "forward", xsub, xpub)
	saw := py.next()["publisher_saw"].([]any)
	py.wait()
	for _, want := range []string{"\x01a.", "\x01b.", "\x00a."} {
		if !slices.Contains(saw, any(want)) {
			t.Errorf("the publisher behind the proxy saw %q, not %q", saw, want)
		}
	}
	if st := px.Stats(); st.Subscribed < 2 || st.Unsubscribed < 1 || st.Forwarded < 2 {
		t.Errorf("proxy stats %+v", st)
	}
}

// TestInteropPyzmqManyFrames: a libzmq PUB's message of 65 one-byte
// frames (libzmq sets no limit on frames) is received, its middle frames
// as "zmq.frame" headers, and the connection goes on (a limit of 64
// frames used to close it, with nothing counted).
func TestInteropPyzmqManyFrames(t *testing.T) {
	py := startPy(t, "wide", "65")
	sub := connected(t, py.next()["endpoint"].(string), Config{})
	m := nextMessage(t, sub)
	if m.Topic != "t" || string(m.Payload) != "x" || len(m.Headers) != 63 {
		t.Fatalf("got topic %q payload %q with %d headers, want t, x and 63", m.Topic, m.Payload, len(m.Headers))
	}
	for i := range 3 {
		if m := nextMessage(t, sub); string(m.Payload) != strconv.Itoa(i) || m.Seq != uint64(i+2) {
			t.Fatalf("got %q seq %d, want %d seq %d", m.Payload, m.Seq, i, i+2)
		}
	}
	if st := sub.Stats(); st.TooLarge != 0 || st.Dialed != 1 {
		t.Errorf("stats %+v: want one connection, none failed", st)
	}
}
