package mode

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// The test's registry: a default mode, a mode known by its fields and one
// that does not shard.
func init() {
	load := func(fs.FS, string) (Experiment, error) { return nil, errors.New("loaded") }
	Register(
		Mode{Name: "offline", Default: true, Load: load},
		Mode{Name: "sim", Infer: []string{"variants"}, Load: load},
		Mode{Name: "agent", NoShard: "one network", Load: load},
	)
}

func TestReadEnvelope(t *testing.T) {
	for _, c := range []struct{ text, mode, err string }{
		{"name: a\n", "offline", ""},
		{"name: a\nmode: sim\n", "sim", ""},
		{"name: a\nvariants: []\n", "sim", ""},                // a simulator field, no mode
		{"name: a\nmode: agent\nvariants: []\n", "agent", ""}, // an explicit mode wins
		{"description: x\n", "", "name: missing"},
		{"name: a\nmode: quantum\n", "", `mode: "quantum" is not one of [offline sim agent]`},
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

// Load hands the file to its mode's Load.
func TestLoadDispatches(t *testing.T) {
	fsys := fstest.MapFS{"a.yaml": {Data: []byte("name: a\nmode: agent\n")}}
	env, _, err := Load(fsys, "a.yaml")
	if env.Mode != "agent" || err == nil || err.Error() != "loaded" {
		t.Fatalf("Load = %+v, %v; want mode agent's loader", env, err)
	}
	if _, _, err := Load(fsys, "none.yaml"); err == nil {
		t.Fatal("a missing file loaded")
	}
}

func TestNoShardError(t *testing.T) {
	err := NoShardError("agent")
	want := "mode agent does not shard or sweep: one network (modes offline and sim do)"
	if err.Error() != want || !errors.Is(err, ErrNoShard) {
		t.Fatalf("NoShardError = %q, want %q", err, want)
	}
}

func TestRegisterRefusesDuplicates(t *testing.T) {
	load := func(fs.FS, string) (Experiment, error) { return nil, nil }
	for _, m := range []Mode{{Name: "sim", Load: load}, {Name: "x", Default: true, Load: load}, {Name: "y"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", m)
				}
			}()
			Register(m)
		}()
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
