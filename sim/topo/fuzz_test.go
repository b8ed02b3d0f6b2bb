package topo

import (
	"io/fs"
	"strings"
	"testing"
)

// FuzzParse: a topology file. Seeds: the built-in
// topologies and testdata/fuzz/FuzzParse. Errors are one line.
func FuzzParse(f *testing.F) {
	names, _ := fs.Glob(Builtin, "topologies/*.yaml")
	for _, n := range names {
		if b, err := fs.ReadFile(Builtin, n); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: t\nnodes: [a, b]\nlinks: [{a: a, b: b, delay_ms: 1, rate_mbps: 10}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("t.yaml", data)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error is not one line: %q", err)
		}
	})
}
