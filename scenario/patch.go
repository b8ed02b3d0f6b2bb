package scenario

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic/internal/yamlfile"
)

// Patch is a partial change of a path's parameters, written as YAML with the
// keys up, down and both, each holding any Link fields:
//
//	{down: {delay_ms: 60}, both: {loss: 0.01}}
//
// Fields it does not name keep their values. Keeping the YAML node, rather than
// a struct of optional twins of every Link field, means a patch can say
// anything a Link can, and the emulator's control API takes the same text.
type Patch struct {
	node yaml.Node
}

// ParsePatch parses patch text such as "{down: {delay_ms: 60}}".
func ParsePatch(text string) (*Patch, error) {
	var p Patch
	if err := yaml.Unmarshal([]byte(text), &p.node); err != nil {
		return nil, fmt.Errorf("patch %q: %v", text, err)
	}
	if len(p.node.Content) == 1 { // unwrap the document node
		p.node = *p.node.Content[0]
	}
	return &p, nil
}

// UnmarshalYAML keeps the node; it is checked when applied (and the scenario
// loader applies every patch once to validate it).
func (p *Patch) UnmarshalYAML(n *yaml.Node) error {
	p.node = *n
	return nil
}

// MarshalYAML writes the patch back as it was given.
func (p Patch) MarshalYAML() (any, error) { return &p.node, nil }

// Apply returns path with the patch applied, after validating the result.
// Errors start with the field name (up, down or both).
func (p *Patch) Apply(path Path) (Path, error) {
	if p.node.Kind != yaml.MappingNode {
		return path, fmt.Errorf("patch must be a mapping with keys up, down or both (line %d)", p.node.Line)
	}
	for i := 0; i+1 < len(p.node.Content); i += 2 {
		key, val := p.node.Content[i].Value, p.node.Content[i+1]
		var targets []*Link
		switch key {
		case "up":
			targets = []*Link{&path.Up}
		case "down":
			targets = []*Link{&path.Down}
		case "both":
			targets = []*Link{&path.Up, &path.Down}
		default:
			return path, fmt.Errorf("%q: unknown key (want up, down or both)", key)
		}
		for _, l := range targets {
			if err := yamlfile.DecodeNode(key, val, l); err != nil {
				return path, err
			}
			if err := l.validate(key); err != nil {
				return path, err
			}
		}
	}
	return path, nil
}

// String renders the patch as one-line YAML.
func (p *Patch) String() string {
	n := p.node
	n.Style = yaml.FlowStyle
	out, err := yaml.Marshal(&n)
	if err != nil {
		return "?"
	}
	return string(out[:len(out)-1])
}
