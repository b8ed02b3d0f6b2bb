// Package purecheck lets a pure algorithm package's test pin its import
// list: such packages (pathsel, qcmab, peekaboo, fec, internal/akf) must
// import no I/O and never read the clock (COMMON rules; STYLE.md §3, §7).
// An allow-list, not a deny-list, so a new import is a decision a reviewer
// sees in the test's diff.
package purecheck

import (
	"fmt"
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
	bad, err := Check(dir, allowed...)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// Check lists, one line each, the imports of dir's non-test Go files that
// are not in allowed.
func Check(dir string, allowed ...string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	seen := 0
	var bad []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		seen++
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(allowed, p) {
				bad = append(bad, fmt.Sprintf("%s imports %q, which is not on the pure package's allow-list", filepath.Base(name), p))
			}
		}
	}
	if seen == 0 {
		return nil, fmt.Errorf("purecheck: no Go files in %s", dir)
	}
	return bad, nil
}
