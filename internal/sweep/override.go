package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseAssign reads FIELD=VALUE (exp run --set): FIELD is a field path as a
// sweep: block names it (rounds, paths[1].down.delay_ms, spec.x,
// scenario.y), VALUE the YAML scalar that replaces the field's.
func ParseAssign(s string) (Assign, error) {
	key, value, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	switch {
	case !ok:
		return Assign{}, fmt.Errorf("%q is not FIELD=VALUE", s)
	case strings.ContainsAny(value, "\n\r"):
		return Assign{}, fmt.Errorf("%s: a value is one line", key)
	}
	if err := checkKey(key); err != nil {
		return Assign{}, err
	}
	return Assign{Key: key, Value: strings.TrimSpace(value)}, nil
}

// Override is the experiment file name of fsys with assigns applied, the
// way a sweep point is (the field must exist up to its last name; the
// scenario's fields reach its scenario file), but keeping the file's own
// sweep: block. The mode's ordinary loader then reads the result, so a bad
// value is its usual one-line error.
func Override(fsys fs.FS, name string, assigns []Assign) (fs.FS, error) {
	if len(assigns) == 0 {
		return fsys, nil
	}
	doc, err := readDoc(fsys, name)
	if err != nil {
		return nil, err
	}
	scen := ""
	if n := lookup(root(doc), "scenario"); n != nil && n.Kind == yaml.ScalarNode && n.Value != "" {
		scen = path.Join(path.Dir(name), n.Value)
	}
	over, err := rewrite(fsys, name, scen, assigns, false)
	if err != nil {
		// Apply's errors speak of a sweep; here the field came from --set.
		return nil, errors.New(strings.TrimPrefix(err.Error(), "sweep: "))
	}
	return over, nil
}

// InlineScenario moves a scenario written inside the experiment file
// (scenario: {paths: …}) to a file of its own beside it, named by
// InlineScenarioName, for the modes that name their scenario by file: it
// returns the rewritten file system and true, or fsys and false when the
// experiment's scenario is not a mapping.
func InlineScenario(fsys fs.FS, name string) (fs.FS, bool, error) {
	doc, err := readDoc(fsys, name)
	if err != nil {
		return nil, false, err
	}
	r := root(doc)
	n := lookup(r, "scenario")
	if n == nil || n.Kind != yaml.MappingNode {
		return fsys, false, nil
	}
	scenData, err := yaml.Marshal(n)
	if err != nil {
		return nil, false, err
	}
	file := InlineScenarioName(name)
	*n = yaml.Node{Kind: yaml.ScalarNode, Value: path.Base(file), Line: n.Line, Column: n.Column}
	specData, err := yaml.Marshal(doc)
	if err != nil {
		return nil, false, err
	}
	return Overlay{Base: fsys, Files: map[string][]byte{name: specData, file: scenData}}, true, nil
}

// InlineScenarioName is what an inline scenario of experiment file name is
// called in error messages and hashes: name.scenario beside it.
func InlineScenarioName(name string) string {
	return strings.TrimSuffix(name, path.Ext(name)) + ".scenario.yaml"
}
