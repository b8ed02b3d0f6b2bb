package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimCLI(t *testing.T) {
	dir := t.TempDir()
	w := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	w("two.yaml", "name: two\npaths:\n  - name: a\n    up: {delay_ms: 10, rate_mbps: 10}\n    down: {delay_ms: 10, rate_mbps: 10}\n  - name: b\n    up: {delay_ms: 30, rate_mbps: 5}\n    down: {delay_ms: 30, rate_mbps: 5}\n")
	w("island.yaml", "name: island\nnodes: [a, b, c]\nlinks:\n  - {a: a, b: b, rate_mbps: 10}\n")
	good := w("good.yaml", "name: good\nscenario: two.yaml\napp: {size_mb: 0.5}\nvariants: [{scheduler: mams}, {scheduler: rr}]\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "run", w("b1.yaml", "name: b\nscenario: two.yaml\napp: {size_mb: 1}\nvariants: [{scheduler: fastest}]\n")}, `variants[0].scheduler: unknown scheduler "fastest"`},
		{[]string{"sim", "run", w("b2.yaml", "name: b\nscenario: two.yaml\napp: {size_mb: 1}\nvariants: [{cc: vegas}]\n")}, `variants[0].cc: unknown congestion control "vegas"`},
		{[]string{"sim", "run", w("b3.yaml", "name: b\ntopology: island.yaml\napp: {size_mb: 1}\nflows: {count: 1, pairs: [[a, c]]}\nvariants: [{scheme: minfct}]\n")}, `flows.pairs[0]: no path between "a" and "c"`},
		{[]string{"sim", "run", w("b4.yaml", "name: b\nscenario: two.yaml\napp: {size_mb: 1, kind: bulk}\nduration_s: -3\nvariants: [{}]\n")}, "duration_s: -3 is outside"},
		{[]string{"sim", "run", good, "--seeds", "-4"}, "--seeds: -4 is outside"},
		{[]string{"sim", "validate", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"sim", "frob"}, `sim: unknown subcommand "frob"`},
		{[]string{"sim", "conext17", "--scenarios", "0"}, "sim conext17: --scenarios 0 must be in [1, 10000]"},
		{[]string{"sim", "lossregime", "extra"}, `sim lossregime: unexpected argument "extra"`},
		{[]string{"sim", "mathis", "extra"}, `sim mathis: unexpected argument "extra"`},
		{[]string{"sim", "vsreal", "--trials", "0", "--md"}, "sim vsreal: --trials 0 and --rate-mbps 20 must be positive"},
		{[]string{"sim", "validate", w("b6.yaml", "name: b\nscenario: two.yaml\napp: {size_mb: 1}\nvariants: [{}, {label: x, stream_window_bytes: 99}]\n")}, "variants[1].stream_window_bytes: 99 is smaller than a packet"},
		{[]string{"sim", "run", w("b5.yaml", "name: b\nscenario: two.yaml\napp: {kind: video, fps: 25, bitrate_mbps: 4, frames: 10}\nvariants: [{}]\n")}, "app.deadline_ms: 0 is outside"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "hetquic: ") || !strings.Contains(last, tc.want) {
			t.Errorf("%v: last stderr line %q, want it to contain %q", tc.args, last, tc.want)
		}
	}
	// One source of the connection's defaults: auto_tune with a stream
	// window and no maximum validates (the run's ceiling is the window).
	tuned := w("tuned.yaml", "name: tuned\nscenario: two.yaml\napp: {size_mb: 0.5}\ntransport: {auto_tune: true, stream_window_bytes: 1048576}\nvariants: [{}]\n")
	if stdout, stderr, code := runCLI(t, "sim", "validate", tuned); code != 0 || !strings.Contains(stdout, "ok") {
		t.Errorf("sim validate of auto_tune + stream_window_bytes: exit %d, %q %q", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, "sim", "run", good, "--out", out, "--seeds", "2", "--quiet")
	if code != 0 {
		t.Fatalf("sim run: exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "mams") || !strings.Contains(stdout, "wrote") {
		t.Errorf("sim run printed %q", stdout)
	}
	for _, f := range []string{"report.md", "summary.json", "goodput.png", "runs/mams_seed2_goodput.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("sim run did not write %s", f)
		}
	}
}
