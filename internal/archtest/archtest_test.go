package archtest

import (
	"os"
	"strings"
	"testing"
)

// The repository obeys ARCHITECTURE.md's import directions.
func TestRepositoryImports(t *testing.T) {
	g, err := Load(os.DirFS("../.."), "github.com/hetquic/hetquic")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Imports) < 20 {
		t.Fatalf("read only %d packages", len(g.Imports))
	}
	for _, v := range g.Check(Rules) {
		t.Error(v)
	}
}

// The checker catches each kind of violation (a fixture module whose
// packages break the rules), and leaves a nested module alone (emu/nested
// imports pcm, but it has a go.mod of its own).
func TestFixtureViolations(t *testing.T) {
	g, err := Load(os.DirFS("testdata/bad"), "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(g.Check(Rules), "\n")
	for _, want := range []string{
		"pathsel imports time (path selection is pure",
		"sim imports pcm (the simulator depends only on scenario",
		"runner depends on sim via runner → sim",
		"runner depends on pcm via runner → sim → pcm",
		"runner depends on github.com/quic-go/quic-go via runner → sim → pcm",
		"emu imports cmd/x: nothing imports the command",
		"cmd/hetquic/exp.go imports mode package modex: only cmd/hetquic/modes.go names modes",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no violation %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "modes.go imports") {
		t.Errorf("the registration file is flagged:\n%s", got)
	}
	if strings.Contains(got, "emu/nested") {
		t.Errorf("a nested module (its own go.mod) is checked as the module's:\n%s", got)
	}
}
