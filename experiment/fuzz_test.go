package experiment

import (
	"maps"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic"
)

// FuzzParseSpec feeds experiment files (beside a fixed scenario and trace)
// to Load and ReadEnvelope: neither may panic, and an error is one line.
// Seeds: testdata/fuzz/FuzzParseSpec and the built-in offline experiments.
func FuzzParseSpec(f *testing.F) {
	for _, name := range []string{"pcm-table5", "pcm-window", "pcm-model", "pcm-ab"} {
		data, err := hetquic.Files.ReadFile("experiments/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.ReplaceAll(string(data), "../scenarios/", ""))
	}
	base := fstest.MapFS{"trace.csv": {Data: []byte("round,a,b\n0,1,2\n1,2,1\n")}}
	for _, sc := range []string{"pcm-table5", "pcm-table6", "pcm-twin30", "leo"} {
		data, err := hetquic.Files.ReadFile("scenarios/" + sc + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		base[sc+".yaml"] = &fstest.MapFile{Data: data}
	}
	f.Fuzz(func(t *testing.T, text string) {
		fsys := maps.Clone(base)
		fsys["x.yaml"] = &fstest.MapFile{Data: []byte(text)}
		if _, err := ReadEnvelope("x.yaml", []byte(text)); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("envelope error of several lines: %q", err)
		}
		s, err := Load(fsys, "x.yaml")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if s.Rounds > 5000 || s.Seeds*len(s.Strategies) > 50 {
			return // valid, too big to run here
		}
		if len(s.PathNames()) == 0 {
			t.Fatal("a loaded spec has no paths")
		}
	})
}
