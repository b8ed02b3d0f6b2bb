package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzLoad: an experiment file, with the scenario and trace
// it may name beside it. Seeds: the shipped experiments (their scenario
// pointed at s.yaml) and testdata/fuzz/FuzzLoad. Errors are one line; an
// accepted spec validates again.
func FuzzLoad(f *testing.F) {
	scn, err := os.ReadFile("testdata/two-paths.yaml")
	if err != nil {
		f.Fatal(err)
	}
	trace, err := os.ReadFile("testdata/trace.csv")
	if err != nil {
		f.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^scenario: .*$`)
	names, _ := filepath.Glob("../experiments/*.yaml")
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(re.ReplaceAll(b, []byte("scenario: s.yaml")))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"e.yaml": {Data: data}, "s.yaml": {Data: scn}, "trace.csv": {Data: trace}}
		s, err := Load(fsys, "e.yaml")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if err := s.validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
	})
}
