// Package sweep expands an experiment's `sweep:` block into points — one
// assignment of values to scenario or spec fields each — and applies a point to
// the YAML documents before they are decoded, so every mode (offline, trace,
// real, sim, agent) sweeps the same way without knowing about sweeps.
//
// A point's ID is a hash of its assignments, not its position in the list, so
// results from different runs, shards or machines can be joined on it even when
// a later spec adds values to a parameter.
package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Designs.
const (
	// Grid is the Cartesian product of every parameter's list of values.
	Grid = "grid"
	// LHS is a Latin hypercube over the ranges: each range is cut into
	// Points strata and every stratum of every range is used exactly once
	// (McKay, Beckman & Conover 1979), which covers a many-dimensional space
	// with far fewer points than a grid.
	LHS = "lhs"
)

// maxPoints bounds a sweep's size: a typo such as 10 lists of 10 values would
// otherwise ask for 10¹⁰ runs and fill the disk before anyone noticed.
const maxPoints = 100_000

// Block is the `sweep:` block of an experiment file.
type Block struct {
	// Design is grid (default) or lhs.
	Design string `yaml:"design"`
	// Params lists values per field (grid), in file order.
	Params yaml.Node `yaml:"params"`
	// Ranges gives [min, max] per field (lhs).
	Ranges map[string]Range `yaml:"ranges"`
	// Points is the number of points of an lhs design.
	Points int `yaml:"points"`
	// Seed draws the lhs design; the same seed gives the same points.
	Seed uint64 `yaml:"seed"`
}

// Range is one continuous parameter of a space-filling design.
type Range struct {
	Min float64 `yaml:"min"`
	Max float64 `yaml:"max"`
	// Log spaces the strata evenly in log(value): rates and delays span
	// decades, and a linear design would put nearly every point in the top one.
	Log bool `yaml:"log"`
	// Int rounds each value to the nearest integer.
	Int bool `yaml:"int"`
}

// Assign sets one field to one value.
type Assign struct {
	Key   string // a field path such as paths[1].down.delay_ms
	Value string // the YAML scalar, canonical for numbers
}

// Point is one setting of every swept field.
type Point struct {
	ID      string
	Assigns []Assign // sorted by Key
}

// Label renders the point's assignments as "key=value, …" for reports.
func (p Point) Label() string {
	parts := make([]string, len(p.Assigns))
	for i, a := range p.Assigns {
		parts[i] = a.Key + "=" + a.Value
	}
	return strings.Join(parts, ", ")
}

// Expand lists the block's points. Errors name the offending field.
func (b *Block) Expand() ([]Point, error) {
	switch b.Design {
	case "", Grid:
		return b.grid()
	case LHS:
		return b.lhs()
	default:
		return nil, fmt.Errorf("sweep.design: %q is not one of grid, lhs", b.Design)
	}
}

func (b *Block) grid() ([]Point, error) {
	if len(b.Ranges) > 0 || b.Points != 0 {
		return nil, fmt.Errorf("sweep: ranges and points belong to design lhs, not grid")
	}
	if b.Params.Kind != yaml.MappingNode || len(b.Params.Content) == 0 {
		return nil, fmt.Errorf("sweep.params: a mapping from field to a list of values is required")
	}
	type param struct {
		key    string
		values []string
	}
	var params []param
	total := 1
	for i := 0; i+1 < len(b.Params.Content); i += 2 {
		k, v := b.Params.Content[i], b.Params.Content[i+1]
		if err := checkKey(k.Value); err != nil {
			return nil, fmt.Errorf("sweep.params: %w", err)
		}
		if slices.ContainsFunc(params, func(p param) bool { return p.key == k.Value }) {
			return nil, fmt.Errorf("sweep.params: %s is listed twice", k.Value)
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, fmt.Errorf("sweep.params.%s: a non-empty list of values is required", k.Value)
		}
		p := param{key: k.Value}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("sweep.params.%s: values must be scalars (numbers, strings, booleans)", k.Value)
			}
			c := canonical(e.Value)
			if slices.Contains(p.values, c) {
				return nil, fmt.Errorf("sweep.params.%s: value %s is listed twice", k.Value, e.Value)
			}
			p.values = append(p.values, c)
		}
		total *= len(p.values)
		if total > maxPoints {
			return nil, fmt.Errorf("sweep.params: more than %d points", maxPoints)
		}
		params = append(params, p)
	}
	points := make([]Point, 0, total)
	idx := make([]int, len(params))
	for range total {
		as := make([]Assign, len(params))
		for j, p := range params {
			as[j] = Assign{Key: p.key, Value: p.values[idx[j]]}
		}
		points = append(points, newPoint(as))
		// Odometer order: the last parameter varies fastest, as a reader
		// of the file expects from nested loops written in file order.
		for j := len(idx) - 1; j >= 0; j-- {
			idx[j]++
			if idx[j] < len(params[j].values) {
				break
			}
			idx[j] = 0
		}
	}
	return points, nil
}

// lhsDigits is how many significant digits an lhs value is written with:
// short labels and file names, and far finer than any range a sweep is
// read at.
const lhsDigits = 6

func (b *Block) lhs() ([]Point, error) {
	if b.Params.Kind != 0 {
		return nil, fmt.Errorf("sweep: params belong to design grid; lhs takes ranges")
	}
	if len(b.Ranges) == 0 {
		return nil, fmt.Errorf("sweep.ranges: design lhs needs at least one range")
	}
	if b.Points < 2 || b.Points > maxPoints {
		return nil, fmt.Errorf("sweep.points: %d is outside [2, %d]", b.Points, maxPoints)
	}
	keys := make([]string, 0, len(b.Ranges))
	for k := range b.Ranges {
		keys = append(keys, k)
	}
	slices.Sort(keys) // map order is random; the design must not be
	for _, k := range keys {
		r := b.Ranges[k]
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("sweep.ranges: %w", err)
		}
		if !(r.Min < r.Max) || math.IsInf(r.Min, 0) || math.IsInf(r.Max, 0) {
			return nil, fmt.Errorf("sweep.ranges.%s: min %g must be below max %g, both finite", k, r.Min, r.Max)
		}
		if r.Log && r.Min <= 0 {
			return nil, fmt.Errorf("sweep.ranges.%s: a log range needs min > 0, not %g", k, r.Min)
		}
	}
	seed := b.Seed
	if seed == 0 {
		seed = 1
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	n := b.Points
	cols := make([][]string, len(keys))
	for j, k := range keys {
		r := b.Ranges[k]
		lo, hi := r.Min, r.Max
		if r.Log {
			lo, hi = math.Log(lo), math.Log(hi)
		}
		perm := rng.Perm(n)
		cols[j] = make([]string, n)
		for i := range n {
			u := (float64(perm[i]) + rng.Float64()) / float64(n)
			v := lo + u*(hi-lo)
			if r.Log {
				v = math.Exp(v)
			}
			if r.Int {
				v = math.Round(v)
			}
			cols[j][i] = strconv.FormatFloat(v, 'g', lhsDigits, 64)
		}
	}
	points := make([]Point, n)
	seen := make(map[string]bool, n)
	for i := range n {
		as := make([]Assign, len(keys))
		for j, k := range keys {
			as[j] = Assign{Key: k, Value: cols[j][i]}
		}
		points[i] = newPoint(as)
		if seen[points[i].ID] {
			// Values are written to lhsDigits significant digits (and int
			// ranges rounded), so dense strata can draw one point twice: two
			// runs of one point would be joined as one.
			return nil, fmt.Errorf("sweep.points: %d points draw %s twice (values have %d significant digits); ask for fewer points or wider ranges", n, points[i].Label(), lhsDigits)
		}
		seen[points[i].ID] = true
	}
	return points, nil
}

func newPoint(as []Assign) Point {
	slices.SortFunc(as, func(a, b Assign) int { return strings.Compare(a.Key, b.Key) })
	h := sha256.New()
	for _, a := range as {
		fmt.Fprintf(h, "%s=%s\n", a.Key, a.Value)
	}
	// 12 hex digits: 48 bits, so a collision among even a million points has
	// odds below 10⁻³; IDs stay short enough for file names and CSV columns.
	return Point{ID: hex.EncodeToString(h.Sum(nil))[:12], Assigns: as}
}

// canonical writes numbers one way, so that 10, 10.0 and 1e1 are one value
// with one point ID; other scalars stay as written.
func canonical(s string) string {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXoObB_") {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return s
}
