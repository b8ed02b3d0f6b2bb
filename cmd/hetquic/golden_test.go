package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/internal/claims"
	"github.com/hetquic/hetquic/internal/yamlfile"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden/*.summary.json from this run")

// goldenSet is one experiment's entry in testdata/golden/pins.yaml.
type goldenSet struct {
	Run  []string `yaml:"run"`
	Slow bool     `yaml:"slow"` // skipped with -short and under -race
	Pins []pin    `yaml:"pins"`
}

type pin struct {
	Metric string           `yaml:"metric"`
	Over   string           `yaml:"over"`
	Cond   claims.Condition `yaml:",inline"`
}

// value is the pin's metric (over Over) in a decoded summary.json.
func (p pin) value(summary any) (float64, error) {
	c := claims.Claim{Metric: p.Metric, Over: p.Over}
	return c.Value(summary)
}

// TestGoldenSummaries runs the built-in experiments and keeps their
// headline results (testdata/golden/pins.yaml) where they were.
func TestGoldenSummaries(t *testing.T) {
	data, err := os.ReadFile("testdata/golden/pins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sets map[string]goldenSet
	if err := yamlfile.Decode("pins.yaml", data, &sets); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(sets))
	for n := range sets {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		set := sets[name]
		t.Run(name, func(t *testing.T) {
			if set.Slow && (testing.Short() || raceEnabled) {
				t.Skip("slow experiment; runs without -short and -race (.ci/run runs it so)")
			}
			if len(set.Pins) == 0 || len(set.Run) == 0 {
				t.Fatal("pins.yaml: an entry needs run and pins")
			}
			out := t.TempDir()
			args := append(slices.Clone(set.Run), "--out", out, "--quiet")
			if _, stderr, code := runCLI(t, args...); code != 0 {
				t.Fatalf("hetquic %s: exit %d: %s", strings.Join(args, " "), code, stderr)
			}
			got := readSummary(t, filepath.Join(out, "summary.json"))
			goldenFile := filepath.Join("testdata", "golden", name+".summary.json")
			if *updateGolden {
				raw, _ := os.ReadFile(filepath.Join(out, "summary.json"))
				if err := os.WriteFile(goldenFile, raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden := readSummary(t, goldenFile)
			for _, p := range set.Pins {
				if p.Cond.String() == "" {
					t.Fatalf("pin %s: no condition", p.Metric)
				}
				v, err := p.value(got)
				if err != nil {
					t.Errorf("pin %s: %v", p.Metric, err)
					continue
				}
				ref, err := p.value(golden)
				if err != nil {
					t.Errorf("pin %s in %s: %v (run with -update)", p.Metric, goldenFile, err)
					continue
				}
				if !p.Cond.HoldsAgainst(v, ref) {
					what := p.Metric
					if p.Over != "" {
						what += " / " + p.Over
					}
					t.Errorf("%s = %g, want %s (golden %g)", what, v, p.Cond.String(), ref)
				}
			}
		})
	}
}

func readSummary(t *testing.T, file string) any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}
