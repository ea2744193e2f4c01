package statsd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestConsoleJSONLines(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{})
	feed(t, a, "c:1|c|#k:v", "g:2.5|g", "t:1|ms", "s:x|s", `q"uote:1|c`)
	snap := a.Flush(t0)
	snap.Timers = append(snap.Timers, TimerValue{Key: "nan", Stats: []Stat{{"sum", math.NaN()}}})
	var out bytes.Buffer
	if err := NewConsole(&out, ConsoleConfig{Self: true}).Flush(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var line struct {
			TS     int64               `json:"ts"`
			Type   string              `json:"type"`
			Key    string              `json:"key"`
			Values map[string]*float64 `json:"values"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		if line.TS != t0.Unix() || len(line.Values) == 0 {
			t.Errorf("bad line %s", sc.Text())
		}
		types[line.Type]++
		if line.Key == "c;k=v" && *line.Values["count"] != 1 {
			t.Errorf("counter line %s", sc.Text())
		}
	}
	if types["counter"] != 5 || types["gauge"] != 1 || types["timer"] != 2 || types["set"] != 1 || types["self"] == 0 {
		t.Errorf("lines per type: %v", types)
	}
}

// Without Self the console prints the metrics received and nothing of
// the server's own: one user metric is one line.
func TestConsoleWithoutSelfMetrics(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{})
	feed(t, a, "c:1|c")
	a.Flush(t0)
	feed(t, a, "user.hits:3|c")
	snap := a.Flush(t0.Add(10 * time.Second)) // with statsd.timestamp_lag
	var self, quiet bytes.Buffer
	if err := NewConsole(&self, ConsoleConfig{Self: true}).Flush(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	if err := NewConsole(&quiet, ConsoleConfig{}).Flush(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	want := `{"ts":1700000010,"type":"counter","key":"c","values":{"count":0,"rate":0}}` + "\n" +
		`{"ts":1700000010,"type":"counter","key":"user.hits","values":{"count":3,"rate":0.3}}` + "\n"
	if got := sortLines(quiet.String()); got != want {
		t.Errorf("without self-metrics:\n%s\nwant\n%s", got, want)
	}
	for _, key := range []string{`"statsd.packets_received"`, `"statsd.timestamp_lag"`, `"statsd.server.keys_rejected"`} {
		if !strings.Contains(self.String(), key) {
			t.Errorf("with self-metrics, no %s:\n%s", key, self.String())
		}
	}
}

func sortLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "")
}

// TestConsoleJSONUnsanitizedKeys: with keyNameSanitize off (Parser.NoSanitize)
// a key holds any byte but '\n' and ':'; each line is still JSON and its
// "key" reads back as the key (invalid UTF-8 as U+FFFD), whatever
// control characters, DEL, quotes or backslashes it has.
func TestConsoleJSONUnsanitizedKeys(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{})
	p := Parser{NoSanitize: true}
	want := map[string]bool{}
	for line, key := range map[string]string{
		"ctl\x01\x1f\tx:1|c":  "ctl\x01\x1f\tx",
		"del\x7f:1|g":         "del\x7f",
		"bad\xff\xfe:1|ms":    "bad\ufffd\ufffd",
		`q"uote\:1|s`:         `q"uote\`,
		"tag:1|c|#k:v\x02\rz": "tag;k=v\x02\rz",
		"cr\rlf:1|c":          "cr\rlf",
	} {
		ms, bad, why := p.AppendLine(nil, []byte(line))
		if bad != 0 {
			t.Fatalf("%q: bad line (%v)", line, why)
		}
		for i := range ms {
			a.Add(&ms[i])
		}
		want[key] = true
	}
	var out bytes.Buffer
	if err := NewConsole(&out, ConsoleConfig{}).Flush(context.Background(), a.Flush(t0)); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var line struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("not JSON: %s: %v", sc.Text(), err)
			continue
		}
		if !want[line.Key] {
			t.Errorf("key %q is none of those sent: %s", line.Key, sc.Text())
		}
		delete(want, line.Key)
	}
	if len(want) > 0 {
		t.Errorf("%d keys missing: %v", len(want), want)
	}
}

// TestConsoleBlockedWriter: a console whose writer blocks (a pipe
// nobody reads) never holds a flush past its deadline: a flush waits,
// then leaves its lines queued; one more waits behind it; a flush that
// finds both places taken is dropped, its lines counted as lost. Once
// the pipe is read, the queued flushes are written and the next flush
// succeeds.
func TestConsoleBlockedWriter(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := Config{TCP: []string{"127.0.0.1:0"}, Backends: []Backend{NewConsole(w, ConsoleConfig{})},
		BackendTimeout: 200 * time.Millisecond}
	cfg.FlushInterval = time.Hour
	s, err := NewServer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer r.Close() // first: a write still blocked fails
	// 3000 lines of some 70 bytes a flush: more than a pipe holds.
	const keys = 3000
	var in strings.Builder
	for i := range keys {
		fmt.Fprintf(&in, "blocked.key.%d:1|c\n", i)
	}
	sendTCP(t, s, in.String())
	waitReceived(t, s, 0, keys)
	flush := func(i int) *Snapshot {
		t.Helper()
		done := make(chan *Snapshot, 1)
		go func() { done <- s.Flush(context.Background()) }()
		select {
		case snap := <-done:
			return snap
		case <-time.After(20 * time.Second):
			t.Fatalf("flush %d blocked on a writer nobody reads", i)
			return nil
		}
	}
	for i, want := range []struct{ errors, lost uint64 }{
		{0, 0},    // flush 1: the writer blocks in it
		{1, 0},    // flush 2: waits behind flush 1
		{1, 0},    // flush 3: dropped
		{1, keys}, // flush 4: dropped
	} {
		snap := flush(i + 1)
		if got := snap.Server.BackendErrors["console"]; got != want.errors {
			t.Errorf("flush %d: %d backend errors before it, want %d", i+1, got, want.errors)
		}
		if got := snap.Server.BackendLinesLost["console"]; got != want.lost {
			t.Errorf("flush %d: %d lines lost before it, want %d", i+1, got, want.lost)
		}
	}
	// Read the pipe: flushes 1 and 2 come out; flush 5, made once
	// flush 2 is being written, is queued and comes out too.
	read := make(chan int, 2)
	go func() {
		sc := bufio.NewScanner(r)
		n := 0
		for sc.Scan() {
			if n++; n%(2*keys) == 0 || n == 3*keys {
				read <- n
			}
		}
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case <-read:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s never came out of the pipe", what)
		}
	}
	wait("flushes 1 and 2")
	snap := flush(5)
	if got := snap.Server.BackendLinesLost["console"]; got != keys {
		t.Errorf("flush 5: %d lines lost before it, want flush 4's %d", got, keys)
	}
	wait("flush 5")
	if lost := flush(6).Server.BackendLinesLost["console"]; lost != 0 {
		t.Errorf("flush 6, the pipe read: %d lines lost, want none", lost)
	}
}
