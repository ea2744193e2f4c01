package latency

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPageReportingNote: a note when the kernel reports free pages (an
// order up to 10), none when reporting is off (order 11) or absent.
func TestPageReportingNote(t *testing.T) {
	dir := t.TempDir() + string(filepath.Separator)
	if n := pageReportingNote(dir); n != "" {
		t.Errorf("no parameters: %q", n)
	}
	for order, on := range map[string]bool{"9\n": true, "10": true, "11\n": false, "x": false} {
		if err := os.WriteFile(dir+"page_reporting_order", []byte(order), 0o644); err != nil {
			t.Fatal(err)
		}
		n := pageReportingNote(dir)
		if on != (n != "") || on && !strings.Contains(n, "page_reporting_order="+strings.TrimSpace(order)) {
			t.Errorf("order %q: note %q", order, n)
		}
	}
}
