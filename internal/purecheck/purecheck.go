// Package purecheck lets a pure algorithm package's test pin its import
// list: such packages (pathsel, qcmab, peekaboo, fec, internal/akf) must
// import no I/O and never read the clock (COMMON rules; STYLE.md §3, §7).
// An allow-list, not a deny-list, so a new import is a decision a reviewer
// sees in the test's diff.
package purecheck

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Imports fails t if a non-test Go file in dir imports a package outside
// allowed (standard-library paths or module paths, exact match).
func Imports(t testing.TB, dir string, allowed ...string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(allowed, p) {
				t.Errorf("%s imports %q, which is not on the pure package's allow-list", filepath.Base(name), p)
			}
		}
	}
	if seen == 0 {
		t.Fatalf("purecheck: no Go files in %s", dir)
	}
}
