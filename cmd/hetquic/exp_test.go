package main

import (
	"os"
	"path/filepath"
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
