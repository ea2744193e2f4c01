package matrix

import (
	"bytes"
	"os"
	"path/filepath"
)

// WriteAll writes, in dir: table.md, results.json, hgrm/*.hgrm and the
// plots.
func (r *Report) WriteAll(dir string) error {
	if err := r.writeHgrms(dir); err != nil {
		return err
	}
	if err := r.WriteJSON(filepath.Join(dir, "results.json")); err != nil {
		return err
	}
	var b bytes.Buffer
	r.WriteTable(&b)
	if err := os.WriteFile(filepath.Join(dir, "table.md"), b.Bytes(), 0o644); err != nil {
		return err
	}
	return r.WritePlots(dir)
}
