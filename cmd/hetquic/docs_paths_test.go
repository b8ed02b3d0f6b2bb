package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsCheckNamesMissingFiles: a doc that links to a file that is not
// there fails the check (and the rewrite) with FILE:LINE and the name; once
// the file exists it passes.
func TestDocsCheckNamesMissingFiles(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "d.md")
	if err := os.WriteFile(doc, []byte("# d\n\nsee [the guide](guide.md)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"docs", "--check", doc}, {"docs", doc}} {
		_, stderr, code := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, doc+":3: guide.md: no such file") {
			t.Errorf("%v: exit %d, stderr %q; want 1 naming %s:3", args, code, stderr, doc)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "guide.md"), []byte("# guide\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "docs", "--check", doc); code != 0 {
		t.Errorf("with the file there: exit %d, stderr %q", code, stderr)
	}
}
