package experiment

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic/internal/yamlfile"
)

// ModeSim and ModeAgent are the modes whose experiments other packages run:
// sim/exp (the simulator) and agent/experiments (the Cybertwin agent's §V
// experiments). Offline, trace and real are this package's (real through
// experiment/realenv).
const (
	ModeSim   = "sim"
	ModeAgent = "agent"
)

// Modes are every mode an experiment file may name.
var Modes = []string{ModeOffline, ModeTrace, ModeReal, ModeSim, ModeAgent}

// Envelope is what every experiment file of every mode has: its name, a
// description, and the mode that says which backend reads the rest (the
// mode-specific fields: strategies and rounds for offline/trace/real,
// variants and app for sim, the agent block for agent). It is decoded once,
// to dispatch; each backend then decodes the whole file strictly, so an
// unknown field is still an error naming it.
type Envelope struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Mode        string `yaml:"mode"`
}

// simOnly are top-level fields only simulator experiments have: a file
// without mode but with one of these is mode sim (the simulator's files
// predate the mode field), any other file without mode is offline.
var simOnly = []string{"variants", "topology", "leo", "mobility", "app", "flows", "path_counts", "transport"}

// ReadEnvelope decodes the envelope of experiment file name. A missing mode
// is inferred (see simOnly). Errors are one line naming the field.
func ReadEnvelope(name string, data []byte) (Envelope, error) {
	var doc map[string]yaml.Node
	if err := yamlfile.Decode(name, data, &doc); err != nil {
		return Envelope{}, err
	}
	var e Envelope
	for key, dst := range map[string]*string{"name": &e.Name, "description": &e.Description, "mode": &e.Mode} {
		if n, ok := doc[key]; ok {
			if err := n.Decode(dst); err != nil {
				return Envelope{}, fmt.Errorf("%s:%d: %s: not a string", name, n.Line, key)
			}
		}
	}
	if e.Mode == "" {
		e.Mode = ModeOffline
		for _, k := range simOnly {
			if _, ok := doc[k]; ok {
				e.Mode = ModeSim
				break
			}
		}
	}
	switch {
	case e.Name == "":
		return e, fmt.Errorf("%s: name: missing", name)
	case !slices.Contains(Modes, e.Mode):
		return e, fmt.Errorf("%s: mode: %q is not one of %v", name, e.Mode, Modes)
	}
	return e, nil
}
