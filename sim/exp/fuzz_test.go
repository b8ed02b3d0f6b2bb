package exp

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// FuzzLoad: a simulator experiment file (issue 12 §9), with a scenario
// beside it. Seeds: the shipped sim experiments (their scenario pointed at
// s.yaml) and testdata/fuzz/FuzzLoad. Errors are one line.
func FuzzLoad(f *testing.F) {
	scn, err := os.ReadFile("../../scenarios/sim-drive.yaml")
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
		dir := t.TempDir()
		file := filepath.Join(dir, "e.yaml")
		if os.WriteFile(file, data, 0o644) != nil || os.WriteFile(filepath.Join(dir, "s.yaml"), scn, 0o644) != nil {
			t.Fatal("write")
		}
		_, err := Load(file)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error is not one line: %q", err)
		}
	})
}
