package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/internal/mode"
)

// The CLI as a newcomer meets it: each case's exit code and
// what stderr must and must not say.
func TestCLIBehavesLikeUnixTools(t *testing.T) {
	t.Parallel() // subprocesses only: independent of every other test
	outFile := filepath.Join(t.TempDir(), "file")
	os.WriteFile(outFile, []byte("x"), 0o644)
	for _, tc := range []struct {
		args       []string
		code       int
		want, deny []string
	}{
		{nil, 2, []string{"Usage: hetquic COMMAND", "hetquic: missing command"}, nil},
		{[]string{"exp", "run", "pcm-model", "--frob"}, 2, []string{"flag provided but not defined: -frob", "-h lists its flags"}, []string{"Usage:"}},
		{[]string{"exp", "run", "pcm-tabel5"}, 2, []string{"did you mean pcm-table5?"}, nil},
		{[]string{"exx", "list"}, 2, []string{`unknown command "exx", did you mean exp?`}, []string{"Usage:"}},
		{[]string{"exp", "lsit"}, 2, []string{"did you mean list?"}, nil},
		{[]string{"exp", "run", "pcm-model", "--seeds", "0"}, 2, []string{"--seeds: 0 is outside [1, 10000]"}, nil},
		{[]string{"exp", "run", "pcm-table5", "--out", outFile}, 2, []string{"--out: " + outFile + " is a file"}, []string{"experiment pcm-table5"}},
		{[]string{"exp", "validate", "../../scenarios/cybertwin-2x2.5.yaml"}, 2, []string{"is a scenario file", "hetquic scenario validate"}, []string{"unknown field"}},
		{[]string{"scenario", "validate", "../../scenarios/cybertwin-2x2.5.yaml"}, 0, nil, nil},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
		}
		for _, w := range tc.want {
			if strings.Count(stderr, w) != 1 {
				t.Errorf("%v: stderr says %q %d times, want once:\n%s", tc.args, w, strings.Count(stderr, w), stderr)
			}
		}
		for _, d := range tc.deny {
			if strings.Contains(stderr, d) {
				t.Errorf("%v: stderr has %q:\n%s", tc.args, d, stderr)
			}
		}
	}
	stdout, _, _ := runCLI(t, "scenario", "validate", "../../scenarios/cybertwin-2x2.5.yaml")
	if !strings.Contains(stdout, "ok (scenario") {
		t.Errorf("scenario validate printed %q", stdout)
	}
}

// exp list prints every description whole (it used to stop at the first
// ". ", which cut "Thesis Fig. 2.17" to "Thesis Fig").
func TestExpListWholeDescriptions(t *testing.T) {
	var b bytes.Buffer
	if err := expList(&b, "", false); err != nil {
		t.Fatal(err)
	}
	bs, err := builtins()
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, e := range bs {
		d := oneLine(e.env.Description)
		if !strings.Contains(b.String(), d) {
			t.Errorf("%s: description not whole: %q", e.name, d)
		}
		if strings.Contains(d, ". ") {
			cut++
		}
	}
	if cut == 0 {
		t.Fatal("no built-in description has a second sentence: the test checks nothing")
	}
}

// Results replace the old ones by rename: a write that fails leaves the old
// directory as it was, one that succeeds replaces the files it writes and
// leaves what it does not (exp slurm's shards/ beside a merge).
func TestResultsWrittenAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "res")
	write := func(files map[string]string, fail bool) error {
		o := &mode.Outcome{Write: func(_ context.Context, d string) ([]string, error) {
			var out []string
			for n, text := range files {
				p := filepath.Join(d, n)
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					return nil, err
				}
				out = append(out, p)
			}
			if fail {
				return nil, errors.New("disk full")
			}
			return out, nil
		}}
		_, got, err := writeTo(context.Background(), o, dir, "x")
		for _, f := range got {
			if !strings.HasPrefix(f, dir+string(filepath.Separator)) {
				t.Errorf("listed %s, not under %s", f, dir)
			}
		}
		return err
	}
	if err := write(map[string]string{"a": "old", "stale": "old"}, false); err != nil {
		t.Fatal(err)
	}
	if err := write(map[string]string{"a": "new", "b": "new"}, true); err == nil {
		t.Fatal("a failed write reported success")
	}
	if a, _ := os.ReadFile(filepath.Join(dir, "a")); string(a) != "old" {
		t.Errorf("after a failed write a = %q, want the old", a)
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); err == nil {
		t.Error("a failed write left a new file among the old")
	}
	if err := write(map[string]string{"a": "new"}, false); err != nil {
		t.Fatal(err)
	}
	if a, _ := os.ReadFile(filepath.Join(dir, "a")); string(a) != "new" {
		t.Errorf("after a write a = %q, want the new", a)
	}
	if _, err := os.Stat(filepath.Join(dir, "stale")); err != nil {
		t.Error("a write removed a file it does not write")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".res.partial-*")); len(left) != 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}

// A scenario path is relative to the working directory or absolute, from
// any directory, and an error names the real (absolute) path.
func TestScenarioPathsFromAnyDirectory(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/cybertwin-2x2.5.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "x.yaml"), src, 0o644)
	t.Chdir(filepath.Join(dir, "sub"))
	for _, p := range []string{"../x.yaml", filepath.Join(dir, "x.yaml"), "./../sub/../x.yaml"} {
		if _, err := loadScenarioFile(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	err = dispatch(context.Background(), []string{"emu", "relay", "--scenario", "../nope.yaml", "--server", "127.0.0.1:9", "--paths", "127.0.0.2"})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "nope.yaml")) {
		t.Errorf("missing scenario: %v; want the path %s", err, filepath.Join(dir, "nope.yaml"))
	}
}

// The demo prints the table the README shows as "this table" (its
// generated block), digit for digit.
func TestDemoPrintsTheREADMETable(t *testing.T) {
	t.Parallel() // subprocesses only: independent of every other test
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "<!-- gen: hetquic exp run pcm-table5 --md -->\n")
	block, _, ok := strings.Cut(block, "<!-- /gen -->")
	if !ok || !strings.Contains(block, "| strategy |") {
		t.Fatal("README.md has no pcm-table5 block")
	}
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "demo", "--out", out)
	if code != 0 || !strings.Contains(stdout, strings.TrimSpace(block)) {
		t.Fatalf("demo (exit %d) does not print the README's table:\n%s\n%s", code, stdout, stderr)
	}
	checkDemoSizes(t, out)
}

// demoFileLimit bounds each file the demo writes: a reader opens a figure
// in a browser and downloads the results, so no file should be the 14 MB
// CSV or 2 MB SVG it once wrote (the rounds are gzipped, the figures
// drawn at the detail a reader can see).
const demoFileLimit = 3 << 20

// demoSVGLimit bounds each SVG: a figure of a few panels of 1000 rounds
// needs some hundred kilobytes, not megabytes.
const demoSVGLimit = 400 << 10

func checkDemoSizes(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		limit := int64(demoFileLimit)
		if strings.HasSuffix(e.Name(), ".svg") {
			limit = demoSVGLimit
		}
		if info.Size() > limit {
			t.Errorf("demo wrote %s of %d bytes, over %d", e.Name(), info.Size(), limit)
		}
	}
}
