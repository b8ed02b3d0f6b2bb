package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"go.yaml.in/yaml/v3"
)

// PointFiles rewrites the experiment file name (without its sweep: block)
// and its scenario scenarioName ("" for none) for point p. The result serves
// them in place of the originals, so a mode's ordinary loader reads the point
// and resolves relative names exactly as for the originals.
func PointFiles(fsys fs.FS, name, scenarioName string, p Point) (fs.FS, error) {
	return rewrite(fsys, name, scenarioName, p.Assigns, true)
}

// rewrite is the experiment file name and its scenario scenarioName ("" for
// none) with assigns applied, served in place of the originals; dropSweep
// leaves the experiment's sweep: block out (a point runs itself only).
func rewrite(fsys fs.FS, name, scenarioName string, assigns []Assign, dropSweep bool) (fs.FS, error) {
	specDoc, err := readDoc(fsys, name)
	if err != nil {
		return nil, err
	}
	if dropSweep {
		deleteKey(specDoc, "sweep")
	}
	var scenDoc *yaml.Node
	if scenarioName != "" {
		if scenDoc, err = readDoc(fsys, scenarioName); err != nil {
			return nil, err
		}
	}
	if err := Apply(specDoc, scenDoc, Point{Assigns: assigns}); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	if files[name], err = yaml.Marshal(specDoc); err != nil {
		return nil, err
	}
	if scenDoc != nil {
		if files[scenarioName], err = yaml.Marshal(scenDoc); err != nil {
			return nil, err
		}
	}
	return Overlay{Base: fsys, Files: files}, nil
}

// readDoc is file name of fsys as a YAML node tree.
func readDoc(fsys fs.FS, name string) (*yaml.Node, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	doc := new(yaml.Node)
	if err := yaml.Unmarshal(data, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return doc, nil
}

func deleteKey(doc *yaml.Node, key string) {
	m := root(doc)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// Hash identifies a plan's inputs: add each file a point was read from.
type Hash struct{ h hashWriter }

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

// NewHash starts a plan's hash.
func NewHash() *Hash { return &Hash{h: sha256.New()} }

// AddFiles adds the named files of fsys, length-prefixed.
func (h *Hash) AddFiles(fsys fs.FS, names ...string) error {
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(h.h, "%d:", len(data))
		h.h.Write(data)
	}
	return nil
}

// AddString adds an override that changes the runs (exp run --seeds).
func (h *Hash) AddString(s string) { fmt.Fprintf(h.h, "%d:%s", len(s), s) }

// String is the hash so far, 16 hex digits.
func (h *Hash) String() string { return hex.EncodeToString(h.h.Sum(nil))[:16] }

// Layout numbers the runs of a plan: point by point, runs[i] runs at point i.
type Layout struct{ offset []int }

// NewLayout lays out points with runs[i] runs each.
func NewLayout(runs []int) Layout {
	off := make([]int, 0, len(runs)+1)
	n := 0
	for _, r := range runs {
		off = append(off, n)
		n += r
	}
	return Layout{offset: append(off, n)}
}

// Runs is the number of runs of every point together.
func (l Layout) Runs() int { return l.offset[len(l.offset)-1] }

// Locate is the point of run k and k's number within it.
func (l Layout) Locate(k int) (point, r int) {
	i, found := slices.BinarySearch(l.offset, k)
	if !found {
		i--
	}
	return i, k - l.offset[i]
}

// First is the number of point i's first run.
func (l Layout) First(i int) int { return l.offset[i] }
