package store

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
)

// TestScanIDs: scanIDs returns the column's ids in order, and closes the
// rows (the connection is free again) whether it reads them all or
// fails on one (a NULL, not a string).
func TestScanIDs(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "ids.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		query string
		want  []string
		fails bool
	}{
		{`SELECT 'a' UNION ALL SELECT 'b' UNION ALL SELECT 'c'`, []string{"a", "b", "c"}, false},
		{`SELECT 'a' WHERE 0`, nil, false},
		{`SELECT 'a' UNION ALL SELECT NULL UNION ALL SELECT 'c'`, nil, true},
	} {
		rows, err := db.Query(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := scanIDs(rows)
		if (err != nil) != tc.fails || !slices.Equal(ids, tc.want) {
			t.Errorf("%s: %q, %v; want %q, failing %v", tc.query, ids, err, tc.want, tc.fails)
		}
		if n := db.Stats().InUse; n != 0 {
			t.Errorf("%s: %d connections in use after scanIDs, want the rows closed", tc.query, n)
		}
	}
}
