package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two runs started in the same second get directories of their own, and
// latest follows the newest.
func TestNewRunDirAndLatest(t *testing.T) {
	t.Chdir(t.TempDir())
	now := time.Date(2026, 11, 28, 13, 0, 0, 0, time.UTC)
	a, err := NewRunDir("x", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRunDir("x", now)
	if err != nil {
		t.Fatal(err)
	}
	if a != filepath.Join("results", "x", "20261128T130000Z") || b != a+"-2" {
		t.Fatalf("run directories %s, %s", a, b)
	}
	for _, d := range []string{a, b} {
		if err := LinkLatest(d); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(filepath.Join("results", "x", LatestLink)); err != nil || got != filepath.Base(d) {
			t.Fatalf("latest → %q (%v), want %s", got, err, filepath.Base(d))
		}
	}
}

// --out may be new, empty (but for shards/, slurm/ and dot files) or an
// earlier result of the same experiment; anything else is refused, naming
// what it holds and where the command's own runs go.
func TestClaimOutDir(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, files map[string]string) string {
		d := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(d, "shards"), 0o755)
		for f, text := range files {
			os.WriteFile(filepath.Join(d, f), []byte(text), 0o644)
		}
		return d
	}
	for _, c := range []struct {
		dir  string
		want string // "" for accepted
	}{
		{filepath.Join(root, "new", "sub"), ""},
		{mk("empty", map[string]string{".hidden": ""}), ""},
		{mk("same", map[string]string{"summary.json": `{"experiment": "x"}`, "a.csv": ""}), ""},
		{mk("other", map[string]string{"summary.json": `{"experiment": "y"}`}), "holds the results of experiment y, not an earlier run of x"},
		{mk("foreign", map[string]string{"notes.txt": "mine"}), "holds no summary.json"},
	} {
		err := ClaimOutDir(c.dir, "x", "x-dir")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.dir, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "results/x-dir/RUN")):
			t.Errorf("%s: %v, want it to say %q", c.dir, err, c.want)
		}
	}
}
