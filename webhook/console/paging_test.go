package console_test

import (
	"html"
	"regexp"
	"testing"
	"time"
)

// TestEventsPagesShowEveryEvent: following the events page's "Older
// events" links shows every event once, also when many share one
// creation time (created is kept to the millisecond, and a log source
// stores hundreds in one): the next page starts after the last event
// shown, not after the last time shown.
func TestEventsPagesShowEveryEvent(t *testing.T) {
	f := newFixture(t)
	const events = 120
	at := time.Now().Add(-time.Hour)
	for i := range events {
		// Three creation times, 40 events each, two of them across a page's end.
		f.event("t", at.Add(time.Duration(i/40)*time.Millisecond))
	}
	c := f.client()
	f.login(c)
	idRe := regexp.MustCompile(`data-event="([^"]+)"`)
	olderRe := regexp.MustCompile(`<a href="(/events\?before=[^"]+)">Older events</a>`)
	seen := map[string]bool{}
	path := "/events"
	for pages := 0; path != "" && pages < 10; pages++ {
		_, _, page := f.do(c, "GET", path, nil)
		for _, m := range idRe.FindAllStringSubmatch(page, -1) {
			if seen[m[1]] {
				t.Errorf("event %s shown twice", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := olderRe.FindStringSubmatch(page); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	if len(seen) != events {
		t.Fatalf("the events pages showed %d of %d events", len(seen), events)
	}
}
