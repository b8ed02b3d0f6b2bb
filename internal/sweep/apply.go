package sweep

import (
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Key prefixes that say which document a field is in. Without one, a field
// whose first name is a top-level key of the experiment file is the
// experiment's; otherwise it is the scenario's (paths[1].down.delay_ms).
const (
	specPrefix     = "spec."
	scenarioPrefix = "scenario."
)

type segment struct {
	name    string
	indices []int
}

// parseKey splits "paths[1].down.delay_ms" into its segments.
func parseKey(key string) ([]segment, error) {
	if key == "" {
		return nil, fmt.Errorf("empty field name")
	}
	var segs []segment
	for part := range strings.SplitSeq(key, ".") {
		name, rest, bracket := strings.Cut(part, "[")
		if name == "" {
			return nil, fmt.Errorf("%s: empty name in the field path", key)
		}
		seg := segment{name: name}
		if bracket {
			rest = "[" + rest
		}
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, fmt.Errorf("%s: malformed index in %q", key, part)
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || i < 0 {
				return nil, fmt.Errorf("%s: index %q is not a non-negative integer", key, rest[1:end])
			}
			seg.indices = append(seg.indices, i)
			rest = rest[end+1:]
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

func checkKey(key string) error {
	_, err := parseKey(strings.TrimPrefix(strings.TrimPrefix(key, specPrefix), scenarioPrefix))
	return err
}

// Apply sets each of p's fields in the experiment document spec or the
// scenario document scen (nil when the experiment has none). A field must
// exist up to its last name; the last name may be new (a default made
// explicit), and the strict decoder that reads the result rejects a typo there.
func Apply(spec, scen *yaml.Node, p Point) error {
	for _, a := range p.Assigns {
		doc, key, err := target(spec, scen, a.Key)
		if err != nil {
			return err
		}
		if err := set(doc, key, a.Value); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	return nil
}

func target(spec, scen *yaml.Node, key string) (*yaml.Node, string, error) {
	if k, ok := strings.CutPrefix(key, specPrefix); ok {
		return spec, k, nil
	}
	if k, ok := strings.CutPrefix(key, scenarioPrefix); ok {
		switch {
		case scen != nil:
			return scen, k, nil
		case inlineScenario(spec):
			// The scenario is written in the experiment file (mode video's
			// scenario: {kind: lattice, …}): its fields are the experiment's.
			return spec, key, nil
		}
		return nil, "", fmt.Errorf("sweep: %s: the experiment has no scenario", key)
	}
	segs, err := parseKey(key)
	if err != nil {
		return nil, "", fmt.Errorf("sweep: %w", err)
	}
	if lookup(root(spec), segs[0].name) != nil {
		return spec, key, nil
	}
	if scen != nil && lookup(root(scen), segs[0].name) != nil {
		return scen, key, nil
	}
	return nil, "", fmt.Errorf("sweep: %s: %q is a field of neither the experiment nor its scenario (prefix spec. or scenario. to add a new one)", key, segs[0].name)
}

// inlineScenario reports whether the experiment writes its scenario as a
// mapping of its own rather than naming a scenario file.
func inlineScenario(spec *yaml.Node) bool {
	n := lookup(root(spec), "scenario")
	return n != nil && n.Kind == yaml.MappingNode
}

func root(doc *yaml.Node) *yaml.Node {
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return doc
}

func lookup(m *yaml.Node, name string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i+1]
		}
	}
	return nil
}

// Value is the scalar the experiment document spec writes at a sweep
// field (spec. prefix allowed; a scenario. field only of a scenario written
// inside it), and whether it writes one there: what a sweep over key
// would replace.
func Value(spec *yaml.Node, key string) (string, bool) {
	segs, err := parseKey(strings.TrimPrefix(key, specPrefix))
	if err != nil {
		return "", false
	}
	n := root(spec)
	for _, seg := range segs {
		n = lookup(n, seg.name)
		for _, i := range seg.indices {
			if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return "", false
			}
			n = n.Content[i]
		}
	}
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", false
	}
	return n.Value, true
}

func set(doc *yaml.Node, key, value string) error {
	segs, err := parseKey(key)
	if err != nil {
		return err
	}
	n := root(doc)
	for si, seg := range segs {
		last := si == len(segs)-1 && len(seg.indices) == 0
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: %s is not a mapping", key, seg.name)
		}
		next := lookup(n, seg.name)
		if next == nil {
			if !last {
				return fmt.Errorf("%s: no field %q", key, seg.name)
			}
			n.Content = append(n.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Value: seg.name},
				&yaml.Node{Kind: yaml.ScalarNode, Value: value})
			return nil
		}
		for _, i := range seg.indices {
			if next.Kind != yaml.SequenceNode {
				return fmt.Errorf("%s: %s is not a list", key, seg.name)
			}
			if i >= len(next.Content) {
				return fmt.Errorf("%s: %s has %d entries, no [%d]", key, seg.name, len(next.Content), i)
			}
			next = next.Content[i]
		}
		n = next
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s: only a scalar field can be swept", key)
	}
	// Clear the tag and style so the decoder infers the type from the new
	// text, as it would have had the file said it.
	*n = yaml.Node{Kind: yaml.ScalarNode, Value: value, Line: n.Line, Column: n.Column}
	return nil
}

// Overlay is an fs.FS that serves Files in place of, or beside, Base's: a
// point's rewritten experiment and scenario are read through it by the
// ordinary loaders, which resolve relative names exactly as for the originals.
type Overlay struct {
	Base  fs.FS
	Files map[string][]byte
}

// Open implements fs.FS.
func (o Overlay) Open(name string) (fs.File, error) {
	if data, ok := o.Files[name]; ok {
		return &memFile{name: name, data: data}, nil
	}
	return o.Base.Open(name)
}

type memFile struct {
	name string
	data []byte
	off  int
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Read(p []byte) (int, error) {
	if f.off >= len(f.data) {
		return 0, io.EOF
	}
	n := copy(p, f.data[f.off:])
	f.off += n
	return n, nil
}

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name[strings.LastIndexByte(i.f.name, '/')+1:] }
func (i memInfo) Size() int64        { return int64(len(i.f.data)) }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
