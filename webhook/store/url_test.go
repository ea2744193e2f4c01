package store

import "testing"

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.example/in?a=1":         "https://hooks.example/in?a=1",
		"https://alice:pw@hooks.example/in":    "https://xxxxx@hooks.example/in",
		"https://tok@hooks.example/in":         "https://xxxxx@hooks.example/in",
		"http://:pw@127.0.0.1:8080/":           "http://xxxxx@127.0.0.1:8080/",
		"http://alice:p%40ss@[::1]:1/x#frag":   "http://xxxxx@[::1]:1/x#frag",
		"http://alice:pw@host/%zz (not a URL)": "(invalid URL)",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
