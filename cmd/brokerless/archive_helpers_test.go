package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// outChild is a brokerless command line in a child process (the test
// binary) whose standard output and error go, in the order written, to
// one file: a subscriber's messages and its gap and stream lines
// interleave as it delivered them (it writes out its messages before
// each such line).
type outChild struct {
	cmd  *exec.Cmd
	path string
	out  *watchFile
	done chan error
	// exited is closed once the child's Wait has returned: what the
	// cleanup checks (reading cmd.ProcessState would race with Wait).
	exited chan struct{}
}

// startOutChild runs args in a child process and waits until its output
// says ready.
func startOutChild(t *testing.T, ready string, args ...string) *outChild {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &outChild{cmd: exec.Command(os.Args[0]), path: path, out: &watchFile{f: f}, done: make(chan error, 1), exited: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), childArgs+"="+strings.Join(args, "\x1f"))
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	seen := c.expect(ready)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := c.cmd.Wait()
		f.Close()
		c.done <- err
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	c.await(t, seen, ready, 30*time.Second)
	return c
}

// expect starts watching the child's output for text: what await waits
// on.
func (c *outChild) expect(text string) <-chan struct{} { return c.out.watch(text) }

// await waits until the child's output contains text, watched for
// since expect returned seen.
func (c *outChild) await(t *testing.T, seen <-chan struct{}, text string, d time.Duration) {
	t.Helper()
	select {
	case <-seen:
	case err := <-c.done:
		c.done <- err
		if !c.out.has(text) {
			t.Fatalf("%v ended (%v) before its output said %q:\n%s", c.cmd.Env[len(c.cmd.Env)-1], err, text, c.tail(t))
		}
	case <-time.After(d):
		t.Fatalf("output without %q after %v:\n%s", text, d, c.tail(t))
	}
}

// signal sends sig to the child.
func (c *outChild) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the child to exit by itself, successfully.
func (c *outChild) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, c.tail(t))
		}
	case <-time.After(d):
		c.cmd.Process.Kill()
		t.Fatalf("no exit after %v:\n%s", d, c.tail(t))
	}
}

// tail is the child's last lines of output, for failure messages.
func (c *outChild) tail(t *testing.T) string {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var keep []string
	for _, l := range lines {
		if !isMessageLine(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep[max(0, len(keep)-20):], "\n")
}

// watchFile writes to a file and tells watchers when what was written
// contains their text.
type watchFile struct {
	f    *os.File
	mu   sync.Mutex
	tail []byte // the end of what was written, as long as the longest text watched
	seen map[string]chan struct{}
	all  map[string]bool
}

func (w *watchFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tail = append(w.tail, p...)
	longest := 0
	for text, ch := range w.seen {
		if strings.Contains(string(w.tail), text) {
			close(ch)
			delete(w.seen, text)
			w.all[text] = true
			continue
		}
		longest = max(longest, len(text))
	}
	if len(w.tail) > longest {
		w.tail = w.tail[len(w.tail)-longest:]
	}
	return n, err
}

// watch returns a channel closed once text has been written from now on.
func (w *watchFile) watch(text string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen, w.all = map[string]chan struct{}{}, map[string]bool{}
	}
	ch := make(chan struct{})
	if w.all[text] {
		close(ch)
		return ch
	}
	w.seen[text] = ch
	return ch
}

func (w *watchFile) has(text string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all[text]
}

// subLog is a subscriber's output, read back: its sessions, in order,
// and its summary line.
type subLog struct {
	sessions []*sessionLog
	summary  string
}

// sessionLog is one stream of a subscriber's output.
type sessionLog struct {
	id    string // as printed, feed/session
	first uint64
	items []subItem
	end   string // the stream end line, if any
}

// subItem is a message (from == to, gap false) or a gap.
type subItem struct {
	from, to uint64
	gap      bool
	reason   string
}

func isMessageLine(l string) bool {
	seq, _, ok := strings.Cut(l, " ")
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(seq, 10, 64)
	return err == nil
}

// readSubLog parses what a subscriber child wrote.
func readSubLog(t *testing.T, path string) *subLog {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var l subLog
	var cur *sessionLog
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case isMessageLine(line):
			seq, _ := strconv.ParseUint(line[:strings.IndexByte(line, ' ')], 10, 64)
			if cur == nil {
				t.Fatalf("message %d before any stream start", seq)
			}
			cur.items = append(cur.items, subItem{from: seq, to: seq})
		case strings.HasPrefix(line, "stream start "):
			var id string
			var first uint64
			if _, err := fmt.Sscanf(line, "stream start %s at seq %d", &id, &first); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			cur = &sessionLog{id: id, first: first}
			l.sessions = append(l.sessions, cur)
		case strings.HasPrefix(line, "stream end "):
			if cur == nil || !strings.HasPrefix(line, "stream end "+cur.id+" ") {
				t.Fatalf("%q: not the end of the stream started last", line)
			}
			cur.end = line
		case strings.HasPrefix(line, "gap "):
			var id string
			var from, to uint64
			if _, err := fmt.Sscanf(line, "gap %s seq %d..%d", &id, &from, &to); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if cur == nil || id != cur.id {
				t.Fatalf("%q: not a gap of the stream started last", line)
			}
			_, reason, _ := strings.Cut(line, "): ")
			cur.items = append(cur.items, subItem{from: from, to: to, gap: true, reason: reason})
		case strings.HasPrefix(line, "received "):
			l.summary = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return &l
}

// account checks the exact accounting of one session: from its first
// position to last, each sequence number delivered once, in order, or
// inside exactly one reported gap. It returns the gaps.
func (s *sessionLog) account(t *testing.T, last uint64) []subItem {
	t.Helper()
	next := s.first
	var gaps []subItem
	for i, it := range s.items {
		if it.from != next || it.to < it.from {
			t.Fatalf("stream %s, item %d: %+v where %d is due (a duplicate, a hole or out of order)", s.id, i, it, next)
		}
		if it.gap {
			gaps = append(gaps, it)
		}
		next = it.to + 1
	}
	if next != last+1 {
		t.Fatalf("stream %s accounted from %d up to %d, want up to %d", s.id, s.first, next-1, last)
	}
	return gaps
}

// archiveCounts reads "from the archive N messages and G gaps (R
// replays, M back to live" from a summary line.
func archiveCounts(t *testing.T, summary string) (messages, gaps, replays, merges uint64) {
	t.Helper()
	i := strings.Index(summary, "from the archive ")
	if i < 0 {
		t.Fatalf("summary %q says nothing of the archive", summary)
	}
	if _, err := fmt.Sscanf(summary[i:], "from the archive %d messages and %d gaps (%d replays, %d back to live", &messages, &gaps, &replays, &merges); err != nil {
		t.Fatalf("summary %q: %v", summary, err)
	}
	return
}
