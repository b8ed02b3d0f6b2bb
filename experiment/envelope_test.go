package experiment

import (
	"strings"
	"testing"
)

func TestReadEnvelope(t *testing.T) {
	for _, c := range []struct{ text, mode, err string }{
		{"name: a\n", ModeOffline, ""},
		{"name: a\nmode: real\n", ModeReal, ""},
		{"name: a\nvariants: []\n", ModeSim, ""},                // a simulator field, no mode
		{"name: a\nmode: agent\nvariants: []\n", ModeAgent, ""}, // an explicit mode wins
		{"description: x\n", "", "name: missing"},
		{"name: a\nmode: quantum\n", "", `mode: "quantum" is not one of`},
		{"name: [1]\n", "", "name: not a string"},
		{"- a\n", "", "x.yaml"},
		{"", "", "empty document"},
	} {
		e, err := ReadEnvelope("x.yaml", []byte(c.text))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: err = %v, want %q", c.text, err, c.err)
		case c.err == "" && (err != nil || e.Mode != c.mode):
			t.Errorf("%q: %+v, %v; want mode %s", c.text, e, err, c.mode)
		}
	}
}

// FuzzReadEnvelope: any bytes give an envelope or a one-line error, never
// a panic; an envelope always has a name and a mode. Seeds:
// testdata/fuzz/FuzzReadEnvelope.
func FuzzReadEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ReadEnvelope("x.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if e.Name == "" || e.Mode == "" {
			t.Fatalf("envelope without name or mode: %+v", e)
		}
	})
}
