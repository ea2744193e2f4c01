package statsd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
)

func TestConsoleJSONLines(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{})
	feed(t, a, "c:1|c|#k:v", "g:2.5|g", "t:1|ms", "s:x|s", `q"uote:1|c`)
	snap := a.Flush(t0)
	snap.Timers = append(snap.Timers, TimerValue{Key: "nan", Stats: []Stat{{"sum", math.NaN()}}})
	var out bytes.Buffer
	if err := NewConsole(&out).Flush(context.Background(), snap); err != nil {
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
