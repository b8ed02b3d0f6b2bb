package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// exp list shows the built-in experiments of every mode, and each of them
// validates (sim ones included: they are embedded).
func TestExpListEveryMode(t *testing.T) {
	stdout, stderr, code := runCLI(t, "exp", "list")
	if code != 0 {
		t.Fatalf("exp list: %d %s", code, stderr)
	}
	for _, want := range []string{"pcm-table5 ", " offline ", " real ", " sim ", " agent ", "maco-throughput", "agent-aggregate"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("exp list lacks %q", want)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		name := strings.Fields(line)[0]
		if out, stderr, code := runCLI(t, "exp", "validate", name); code != 0 || !strings.Contains(out, ": ok (mode ") {
			t.Errorf("exp validate %s: %d %s %s", name, code, out, stderr)
		}
	}
	if out, _, code := runCLI(t, "sim", "list"); code != 0 || strings.Contains(out, " offline ") || !strings.Contains(out, "sim-dash") {
		t.Errorf("sim list: %d %q", code, out)
	}
	if out, _, code := runCLI(t, "sim", "validate", "maco-throughput"); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("sim validate maco-throughput: %d %q", code, out)
	}
}

// --md prints the report's tables, the same whatever --workers, and writes
// no files.
func TestExpRunMDDeterministic(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // where results/ would go
	for _, name := range []string{"pcm-table5", "sim-dash"} {
		var outs []string
		for _, w := range []string{"1", "3"} {
			cmdArgs := []string{"exp", "run", name, "--md", "--seeds", "2", "--workers", w}
			stdout, stderr, code := runCLI(t, cmdArgs...)
			if code != 0 || stderr != "" {
				t.Fatalf("%v: %d, stderr %q", cmdArgs, code, stderr)
			}
			outs = append(outs, stdout)
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: --md differs between 1 and 3 workers", name)
		}
		if !strings.HasPrefix(outs[0], "| ") || !strings.Contains(outs[0], "|---|") {
			t.Errorf("%s: not a Markdown table: %q", name, outs[0])
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: --md wrote files", name)
		}
	}
}

func TestExpBadEnvelope(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"name: x\nmode: quantum\n", `mode: "quantum" is not one of`},
		{"description: no name\n", "name: missing"},
		{"name: x\nmode: sim\nrounds: 3\n", `unknown field "rounds"`},
		{"name: x\nmode: agent\nagent: {experiment: teleport}\n", "agent.experiment"},
	} {
		f := filepath.Join(dir, "x.yaml")
		os.WriteFile(f, []byte(c.text), 0o644)
		_, stderr, code := runCLI(t, "exp", "validate", f)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("%q: exit %d, stderr %q, want one line with %q", c.text, code, stderr, c.want)
		}
	}
}

// --set changes one field of the experiment (rounds) or of its scenario
// file (a path's delay), for exp run and sim run alike; the summary names
// the changed run's provenance.
func TestExpRunSet(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r")
	if _, stderr, code := runCLI(t, "exp", "run", "pcm-table5", "--seeds", "1", "--set", "rounds=7", "--set", "paths[0].down.delay_ms=50", "--out", out, "--quiet"); code != 0 {
		t.Fatalf("exp run --set: %d %s", code, stderr)
	}
	data := readGzip(t, filepath.Join(out, "rounds.csv.gz"))
	if rows := strings.Count(string(data), "\n") - 1; rows%7 != 0 || rows == 0 || rows > 7*20 {
		t.Errorf("rounds.csv has %d rows; want 7 rounds per strategy", rows)
	}
	var slow []float64 // TCTs on cernet, 50 ms one way down now
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Split(line, ","); len(f) == 8 && f[3] == "cernet" {
			v, _ := strconv.ParseFloat(f[5], 64)
			slow = append(slow, v)
		}
	}
	if len(slow) == 0 || slices.Min(slow) < 50 {
		t.Errorf("cernet TCTs %v; want every one ≥ 50 ms after --set paths[0].down.delay_ms=50", slow)
	}
	simOut := filepath.Join(dir, "s")
	if _, stderr, code := runCLI(t, "sim", "run", "sim-dash", "--seeds", "1", "--set", "duration_s=20", "--out", simOut, "--quiet"); code != 0 {
		t.Fatalf("sim run --set: %d %s", code, stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(simOut, "summary.json")); !strings.Contains(string(data), `"provenance"`) {
		t.Errorf("sim summary.json without provenance: %s", data)
	}
}

// A bad --set is one line naming the field or value, exit 2.
func TestExpRunSetBad(t *testing.T) {
	for set, want := range map[string]string{
		"roundz=3":            `"roundz" is a field of neither the experiment nor its scenario`,
		"rounds=abc":          "with --set rounds=abc: ",
		"rounds":              `"rounds" is not FIELD=VALUE`,
		"strategies[99].a=1":  "strategies has 14 entries, no [99]",
		"paths[x].delay_ms=1": `index "x" is not a non-negative integer`,
		"=3":                  "empty field name",
	} {
		_, stderr, code := runCLI(t, "exp", "run", "pcm-table5", "--set", set, "--quiet", "--out", t.TempDir())
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], want) {
			t.Errorf("--set %s: exit %d, stderr %q; want one line with %q", set, code, stderr, want)
		}
	}
}

// A scenario written inside an offline experiment (where the mode expects
// a file name) is read as a file of its own; a bad one is named as such.
func TestExpRunInlineScenario(t *testing.T) {
	dir := t.TempDir()
	spec := `name: inl
mode: offline
strategies: [{strategy: psa}]
rounds: 20
seeds: 1
scenario:
  name: two
  paths:
    - {name: a, up: {delay_ms: 10, rate_mbps: 10}, down: {delay_ms: 10, rate_mbps: 10}}
    - {name: b, up: {delay_ms: 30, rate_mbps: 5}, down: {delay_ms: 30, rate_mbps: %s}}
`
	good := filepath.Join(dir, "inl.yaml")
	os.WriteFile(good, []byte(strings.Replace(spec, "%s", "5", 1)), 0o644)
	if _, stderr, code := runCLI(t, "exp", "run", good, "--quiet", "--out", filepath.Join(dir, "o")); code != 0 {
		t.Fatalf("inline scenario: %d %s", code, stderr)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(spec, "%s", "-5", 1)), 0o644)
	_, stderr, code := runCLI(t, "exp", "validate", bad)
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "bad.scenario.yaml") || strings.Contains(stderr, "!!map") {
		t.Errorf("bad inline scenario: exit %d, stderr %q", code, stderr)
	}
}

// Without --out every run writes a directory of its own under
// results/NAME and latest links the newest; --out refuses another
// experiment's results and a directory that cannot be made, before any run.
func TestExpRunOutputNeverMixes(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	run := func(args ...string) (string, int) {
		_, stderr, code := runCLI(t, append([]string{"exp", "run", "pcm-table5", "--seeds", "1", "--set", "rounds=3", "--quiet"}, args...)...)
		return stderr, code
	}
	for range 2 {
		if stderr, code := run(); code != 0 {
			t.Fatalf("exp run: %d %s", code, stderr)
		}
	}
	runs, _ := filepath.Glob(filepath.Join("results", "pcm-table5", "2*"))
	if len(runs) != 2 {
		t.Fatalf("run directories %v, want 2", runs)
	}
	latest, err := os.Readlink(filepath.Join("results", "pcm-table5", "latest"))
	if err != nil || latest != filepath.Base(runs[1]) {
		t.Fatalf("latest → %q (%v), want %s", latest, err, filepath.Base(runs[1]))
	}
	for _, r := range runs {
		if _, err := os.Stat(filepath.Join(r, "summary.json")); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
	if stderr, code := run("--out", runs[0]); code != 0 { // its own earlier run: replaced
		t.Fatalf("--out an earlier run: %d %s", code, stderr)
	}
	_, stderr, code := runCLI(t, "exp", "run", "sim-dash", "--seeds", "1", "--out", runs[0])
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "holds the results of experiment pcm-table5") {
		t.Errorf("--out another experiment's results: %d %q", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if stderr, code := run("--out", dir); code != 2 || !strings.Contains(stderr, "holds no summary.json") {
		t.Errorf("--out a foreign directory: %d %q", code, stderr)
	}
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if stderr, code := run("--out", filepath.Join(blocker, "sub")); code != 2 || strings.Contains(stderr, "runs in") {
		t.Errorf("--out under a file: %d %q", code, stderr)
	}
}

// readGzip is the content of a gzipped file (rounds.csv.gz).
func readGzip(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
