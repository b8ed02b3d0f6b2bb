package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every writer besides exp run keeps its runs apart as exp run does: by
// default a results/NAME/RUN of its own, latest linking the newest; --out
// an earlier result of the same command is replaced; --out a foreign,
// non-empty directory is refused in one line (exit 2).
func TestWritersKeepRunsApart(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := runCLI(t, "exp", "run", "pcm-two-paths", "--seeds", "1", "--shard", "0/1", "--out", "shards/0", "--quiet"); code != 0 {
		t.Fatalf("exp run --shard: %d %s", code, stderr)
	}
	foreign := "foreign"
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	for _, c := range []struct {
		dirName string
		args    []string
	}{
		{"pcm-two-paths", []string{"exp", "merge", "shards/0"}},
		{"ride-eval", []string{"ride", "eval", "--frames", "30", "--quiet"}},
	} {
		t.Run(c.dirName, func(t *testing.T) {
			for range 2 {
				if _, stderr, code := runCLI(t, c.args...); code != 0 {
					t.Fatalf("%v: %d %s", c.args, code, stderr)
				}
			}
			runs, _ := filepath.Glob(filepath.Join("results", c.dirName, "2*"))
			if len(runs) != 2 {
				t.Fatalf("%v twice: run directories %v, want 2", c.args, runs)
			}
			latest, err := os.Readlink(filepath.Join("results", c.dirName, "latest"))
			if err != nil || latest != filepath.Base(runs[1]) {
				t.Fatalf("latest → %q (%v), want %s", latest, err, filepath.Base(runs[1]))
			}
			for _, r := range runs {
				if _, err := os.Stat(filepath.Join(r, "summary.json")); err != nil {
					t.Error(err)
				}
			}
			withOut := func(dir string) []string { return append([]string{c.args[0], c.args[1], "--out", dir}, c.args[2:]...) }
			if _, stderr, code := runCLI(t, withOut(runs[0])...); code != 0 {
				t.Errorf("--out its own earlier run: %d %s", code, stderr)
			}
			_, stderr, code := runCLI(t, withOut(foreign)...)
			if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "holds no summary.json") {
				t.Errorf("--out a foreign directory: %d %q", code, stderr)
			}
		})
	}
}

// emu measure runs its measurements one at a time with progress on stderr
// and prints each mode's results in the order the modes were given.
func TestEmuMeasureProgressAndOrder(t *testing.T) {
	stdout, stderr, code := runCLI(t, "emu", "measure", "--mode", "loss,delay", "--loss", "0.01", "--count", "200", "--delay-ms", "1", "--duration", "200ms")
	if code != 0 {
		t.Fatalf("emu measure: %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"loss"`) || !strings.Contains(lines[1], `"delay"`) {
		t.Errorf("results %q: want the loss measurement, then the delay one", lines)
	}
	if !strings.Contains(stderr, "emu measure: 2/2 runs") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
}
