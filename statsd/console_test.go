package statsd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
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
