package sweep

import (
	"cmp"
	"fmt"
	"io/fs"
	"path"
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
	Hash   string
	layout Layout
	loader Loader[S]
}

// Loader is what LoadSet needs of a mode.
type Loader[S any] struct {
	// Load reads and validates experiment file name of fsys.
	Load func(fsys fs.FS, name string) (S, error)
	// Extra are the files a spec read beside itself and its scenario (a
	// trace, a topology), relative to the spec; all of them are hashed.
	Extra func(s S) []string
	// Sweep is a spec's sweep: block (nil: none) and Scenario its
	// scenario file as the spec names it, relative to the spec ("" for none).
	Sweep    func(s S) *Block
	Scenario func(s S) string
	// Same checks that a point runs what the file does (the same strategies
	// or variants); a sweep may change their settings, not which run.
	Same func(base, point S) error
	// Runs is the number of runs of a spec (strategies or variants ×
	// seeds); Seeds and SetSeeds read and override its seeds (SetSeeds nil:
	// the mode has no seeds to override, and its shards say seeds 0).
	Runs     func(s S) int
	Seeds    func(s S) int
	SetSeeds func(s S, n int)
}

// LoadSet reads experiment file name and expands its sweep: each point's
// files are rewritten (PointFiles) and read by the mode's own loader, so a
// bad value is that loader's one-line error, naming the point.
func LoadSet[S any](fsys fs.FS, name string, l Loader[S]) (*Set[S], error) {
	base, err := l.Load(fsys, name)
	if err != nil {
		return nil, err
	}
	set := &Set[S]{loader: l}
	h := NewHash()
	block := l.Sweep(base)
	if block == nil {
		set.Points, set.Specs = []Point{{}}, []S{base}
		if err := h.AddFiles(fsys, l.inputs(base, name)...); err != nil {
			return nil, err
		}
		set.Hash = h.String()
		set.relayout()
		return set, nil
	}
	set.Swept, set.Design = true, cmp.Or(block.Design, Grid)
	if set.Points, err = block.Expand(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	scen := l.scenario(base, name)
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
		if err := h.AddFiles(over, l.inputs(s, name)...); err != nil {
			return nil, err
		}
		set.Specs = append(set.Specs, s)
	}
	set.Hash = h.String()
	set.relayout()
	return set, nil
}

// scenario is s's scenario file in the spec's file system ("" for none).
func (l Loader[S]) scenario(s S, name string) string {
	if rel := l.Scenario(s); rel != "" {
		return path.Join(path.Dir(name), rel)
	}
	return ""
}

// inputs are every file s was read from: itself, its scenario, the extras.
func (l Loader[S]) inputs(s S, name string) []string {
	files := []string{name}
	if scen := l.scenario(s, name); scen != "" {
		files = append(files, scen)
	}
	for _, f := range l.Extra(s) {
		files = append(files, path.Join(path.Dir(name), f))
	}
	return files
}

// Single is the set of one spec run as it is (not read from a file).
func Single[S any](s S, l Loader[S]) *Set[S] {
	set := &Set[S]{Points: []Point{{}}, Specs: []S{s}, loader: l}
	set.relayout()
	return set
}

func (s *Set[S]) relayout() {
	runs := make([]int, len(s.Specs))
	for i, sp := range s.Specs {
		runs[i] = s.loader.Runs(sp)
	}
	s.layout = NewLayout(runs)
}

// Runs is the number of runs of every point together.
func (s *Set[S]) Runs() int { return s.layout.Runs() }

// Locate is the point of run k and k's number within it.
func (s *Set[S]) Locate(k int) (point, r int) { return s.layout.Locate(k) }

// First is the number of point i's first run.
func (s *Set[S]) First(i int) int { return s.layout.First(i) }

// Owned lists the runs that shard owns, in order.
func (s *Set[S]) Owned(shard Shard) []int {
	var owned []int
	for k := range s.Runs() {
		if shard.Owns(k) {
			owned = append(owned, k)
		}
	}
	return owned
}

// SetSeeds runs every point on n seeds instead of the files' (exp run
// --seeds). The hash changes with it, so shards run with other seeds are
// never merged with these.
func (s *Set[S]) SetSeeds(n int) {
	if n == s.loader.Seeds(s.Specs[0]) {
		return // the files' own: the same runs, the same hash
	}
	for _, sp := range s.Specs {
		s.loader.SetSeeds(sp, n)
	}
	s.relayout()
	h := NewHash()
	h.AddString(s.Hash + " seeds=" + strconv.Itoa(n))
	s.Hash = h.String()
}

// PointPrefix names point i in an error message ("" without a sweep).
func (s *Set[S]) PointPrefix(i int) string {
	if !s.Swept {
		return ""
	}
	return "point " + s.Points[i].Label() + ": "
}
