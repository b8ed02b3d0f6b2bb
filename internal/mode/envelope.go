package mode

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic/internal/yamlfile"
)

// Envelope is what every experiment file of every mode has: its name, a
// description, and the mode that says which backend reads the rest. It is
// decoded once, to dispatch; the mode then decodes the whole file strictly,
// so an unknown field is still an error naming it.
type Envelope struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Mode        string `yaml:"mode"`
}

// ReadEnvelope decodes the envelope of experiment file name. A missing mode
// is inferred from the registered modes' Infer fields, else the default
// mode. Errors are one line naming the field.
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
		e.Mode = infer(doc)
	}
	switch {
	case e.Name == "":
		return e, fmt.Errorf("%s: name: missing", name)
	case e.Mode == "":
		return e, fmt.Errorf("%s: mode: missing (one of %v)", name, Names())
	case !slices.Contains(Names(), e.Mode):
		return e, fmt.Errorf("%s: mode: %q is not one of %v", name, e.Mode, Names())
	}
	return e, nil
}

// infer is the mode of a file without mode:.
func infer(doc map[string]yaml.Node) string {
	def := ""
	for _, m := range registry {
		for _, k := range m.Infer {
			if _, ok := doc[k]; ok {
				return m.Name
			}
		}
		if m.Default {
			def = m.Name
		}
	}
	return def
}
