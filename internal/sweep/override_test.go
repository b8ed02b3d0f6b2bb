package sweep

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseAssign(t *testing.T) {
	for in, want := range map[string]string{
		"rounds=7":                      "rounds=7",
		" paths[1].down.delay_ms = 20 ": "paths[1].down.delay_ms=20",
		"scenario.name=a=b":             "scenario.name=a=b",
		"rounds":                        "",
		"=1":                            "",
		"a[=1":                          "",
		"a=1\nb: 2":                     "",
	} {
		a, err := ParseAssign(in)
		if got := a.Key + "=" + a.Value; (err == nil) != (want != "") || (err == nil && got != want) {
			t.Errorf("ParseAssign(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func FuzzParseAssign(f *testing.F) {
	f.Add("paths[1].down.delay_ms=20")
	f.Add("=")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAssign(s)
		if err == nil && (a.Key == "" || checkKey(a.Key) != nil || strings.ContainsAny(a.Value, "\n\r")) {
			t.Fatalf("ParseAssign(%q) = %+v", s, a)
		}
	})
}

// Override rewrites a field of the experiment and one of its scenario file
// and keeps the experiment's sweep: block; InlineScenario moves a written
// scenario to a file of its own.
func TestOverrideAndInlineScenario(t *testing.T) {
	fsys := fstest.MapFS{
		"e/x.yaml":   {Data: []byte("name: x\nscenario: ../s.yaml\nrounds: 5\nsweep: {grid: {rounds: [1, 2]}}\n")},
		"s.yaml":     {Data: []byte("paths:\n  - {name: a, down: {delay_ms: 1}}\n")},
		"e/inl.yaml": {Data: []byte("name: y\nscenario: {paths: [{name: a}]}\n")},
	}
	over, err := Override(fsys, "e/x.yaml", []Assign{{"rounds", "9"}, {"paths[0].down.delay_ms", "40"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := fs.ReadFile(over, "e/x.yaml")
	scen, _ := fs.ReadFile(over, "s.yaml")
	if !strings.Contains(string(spec), "rounds: 9") || !strings.Contains(string(spec), "sweep:") || !strings.Contains(string(scen), "delay_ms: 40") {
		t.Fatalf("override:\n%s\n%s", spec, scen)
	}
	if _, err := Override(fsys, "e/x.yaml", []Assign{{"nope", "1"}}); err == nil || strings.HasPrefix(err.Error(), "sweep:") {
		t.Fatalf("unknown field: %v", err)
	}
	inl, moved, err := InlineScenario(fsys, "e/inl.yaml")
	if err != nil || !moved {
		t.Fatalf("InlineScenario: %v %v", moved, err)
	}
	spec, _ = fs.ReadFile(inl, "e/inl.yaml")
	scen, _ = fs.ReadFile(inl, "e/inl.scenario.yaml")
	if !strings.Contains(string(spec), "scenario: inl.scenario.yaml") || !strings.Contains(string(scen), "name: a") {
		t.Fatalf("inline:\n%s\n%s", spec, scen)
	}
	if _, moved, _ := InlineScenario(fsys, "e/x.yaml"); moved {
		t.Fatal("a scenario file name was moved")
	}
}
