package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad QC-MAB parameters are one line on stderr and exit code 2.
func TestQCMABBadInputExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exp", "run", "testdata/qcmab-bad-thresholds.yaml"}, "bandwidth thresholds must be finite, ≥ 0 and increasing (got 10, 5)"},
		{[]string{"exp", "run", "testdata/qcmab-bad-gamma.yaml"}, "reliability Γ must be in (0, 1] (got 1.5)"},
		{[]string{"exp", "run", "testdata/qcmab-bad-arm.yaml"}, `unknown arm "wifi+fec"`},
		{[]string{"exp", "run", "qcmab-fig4-9", "--seeds", "0", "--json", "--md"}, "--json and --md exclude each other"},
		{[]string{"exp", "run", "qcmab-fig4-9", "--seeds", "-3"}, "--seeds: -3"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// A chapter-4 experiment runs through "exp run NAME" and writes its report,
// summary and figures (PNG and SVG).
func TestQCMABExpRunWrites(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "qcmab-tiny.yaml")
	if err := os.WriteFile(spec, []byte(`name: qcmab-tiny
mode: video
figure: "4.5"
scenario: {kind: lattice, ap_spacing_m: 20, area_m: 60, speed_mps: 10}
duration_s: 6
seeds: 2
replay: true
variants:
  - {label: QC-MAB, controller: qcmab}
  - {label: Peekaboo, controller: peekaboo}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, "exp", "run", spec, "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "| QC-MAB |") || !strings.Contains(stdout, "| Peekaboo |") {
		t.Errorf("table missing rows: %s", stdout)
	}
	for _, f := range []string{"report.md", "summary.json", "rows.csv", "goodput.png", "goodput.svg", "bl_delay_cdf.svg", "reward_500.png", "ir.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Rows []struct {
			Label        string  `json:"label"`
			ReplayReward float64 `json:"replay_reward"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &sum); err != nil || len(sum.Rows) != 2 || sum.Rows[0].ReplayReward <= 0 {
		t.Fatalf("summary rows %+v, %v; want 2 rows and a replay estimate for QC-MAB", sum.Rows, err)
	}
}
