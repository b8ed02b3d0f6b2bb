package runner

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic"
)

// FuzzParseSpec feeds agent experiment files to Load: it may not panic,
// an error is one line, and a loaded spec is prepared (defaults set).
func FuzzParseSpec(f *testing.F) {
	for _, n := range Names {
		data, err := hetquic.Files.ReadFile("experiments/agent-" + n + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.ReplaceAll(string(data), "../scenarios/", ""))
	}
	sc, err := hetquic.Files.ReadFile("scenarios/cybertwin-2x2.5.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Load(fstest.MapFS{"x.yaml": {Data: []byte(text)}, "cybertwin-2x2.5.yaml": {Data: sc}}, "x.yaml")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if s.Agent.Scale <= 0 || s.Agent.Repeat < 1 || s.Seed == 0 {
			t.Fatalf("loaded but not prepared: %+v", s.Agent)
		}
	})
}
