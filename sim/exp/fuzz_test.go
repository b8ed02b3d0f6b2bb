package exp

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic"
)

// FuzzParseSpec feeds sim experiment files (beside a fixed scenario) to
// Parse: it may not panic, and an error is one line. Seeds:
// testdata/fuzz/FuzzParseSpec and some of the built-in sim experiments.
func FuzzParseSpec(f *testing.F) {
	for _, name := range []string{"sim-paths", "sim-dash", "maco-throughput", "sim-abilene-10mb"} {
		data, err := hetquic.Files.ReadFile("sim/experiments/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.ReplaceAll(string(data), "../../scenarios/", ""))
	}
	sc, err := hetquic.Files.ReadFile("scenarios/sim-hetero8.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fsys := fstest.MapFS{"x.yaml": {Data: []byte(text)}, "sim-hetero8.yaml": {Data: sc}, "sim-drive.yaml": {Data: sc}}
		s, err := Parse(fsys, "x.yaml", []byte(text))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if len(s.Variants) == 0 || s.Seeds < 1 {
			t.Fatalf("a parsed spec without variants or seeds: %+v", s)
		}
	})
}
