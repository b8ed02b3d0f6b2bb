package sweep

import (
	"cmp"
	"fmt"
	"io/fs"
	"strconv"
)

// Set is what an experiment file asks to run, point by point: its Specs
// (one per point; one point with no assignment when the file has no sweep).
type Set[S any] struct {
	Swept  bool
	Design string // grid or lhs; empty without a sweep
	Points []Point
	Specs  []S
	// Hash identifies the inputs (every point's files and any override), so
	// that a merge refuses shards of another plan.
	Hash string
}

// Loader is what LoadSet needs of a mode.
type Loader[S any] struct {
	// Load reads and validates experiment file name of fsys.
	Load func(fsys fs.FS, name string) (S, error)
	// Inputs are the files a spec read (itself, its scenario, …), hashed.
	Inputs func(s S, name string) []string
	// Sweep is a spec's sweep: block (nil: none) and Scenario the name of
	// its scenario file in fsys ("" for none).
	Sweep    func(s S) *Block
	Scenario func(s S, name string) string
	// Same checks that a point runs what the file does (the same strategies
	// or variants); a sweep may change their settings, not which run.
	Same func(base, point S) error
}

// LoadSet reads experiment file name and expands its sweep: each point's
// files are rewritten (PointFiles) and read by the mode's own loader, so a
// bad value is that loader's one-line error, naming the point.
func LoadSet[S any](fsys fs.FS, name string, l Loader[S]) (*Set[S], error) {
	base, err := l.Load(fsys, name)
	if err != nil {
		return nil, err
	}
	set := &Set[S]{}
	h := NewHash()
	block := l.Sweep(base)
	if block == nil {
		set.Points, set.Specs = []Point{{}}, []S{base}
		if err := h.AddFiles(fsys, l.Inputs(base, name)...); err != nil {
			return nil, err
		}
		set.Hash = h.String()
		return set, nil
	}
	set.Swept, set.Design = true, cmp.Or(block.Design, Grid)
	if set.Points, err = block.Expand(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	scen := l.Scenario(base, name)
	for _, p := range set.Points {
		over, err := PointFiles(fsys, name, scen, p)
		if err != nil {
			return nil, fmt.Errorf("%s: point %s: %w", name, p.Label(), err)
		}
		s, err := l.Load(over, name)
		if err != nil {
			return nil, fmt.Errorf("sweep point %s: %w", p.Label(), err)
		}
		if err := l.Same(base, s); err != nil {
			return nil, fmt.Errorf("%s: point %s: %w", name, p.Label(), err)
		}
		if err := h.AddFiles(over, l.Inputs(s, name)...); err != nil {
			return nil, err
		}
		set.Specs = append(set.Specs, s)
	}
	set.Hash = h.String()
	return set, nil
}

// Reseed is the hash of a set run on n seeds instead of the files' (exp run
// --seeds), so shards run with other seeds are never merged with these.
func Reseed(hash string, n int) string {
	h := NewHash()
	h.AddString(hash + " seeds=" + strconv.Itoa(n))
	return h.String()
}
