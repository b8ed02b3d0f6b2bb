package pathsel

import (
	"fmt"
	"math"
	"slices"
)

// pathStat is what a selector remembers of one path: running sums over the
// samples in its window, so an estimate costs O(1) however large S is.
type pathStat struct {
	id PathID
	n  int
	// Running sums of x, x², ln x, (ln x)² over the window.
	sum, sumSq, sumLn, sumLnSq float64
	// sorted holds the window's samples in ascending order, kept only when
	// the Gaussian estimator must drop the largest ones (g > 0).
	sorted []float64
	// ring is the path's own window (Scope PerPath).
	ring []float64
	head int
	// est caches the estimate until the samples change.
	est   estimate
	estOK bool
}

func (p *pathStat) add(x float64, keepSorted bool) {
	p.n++
	lx := math.Log(x)
	p.sum += x
	p.sumSq += x * x
	p.sumLn += lx
	p.sumLnSq += lx * lx
	if keepSorted {
		i, _ := slices.BinarySearch(p.sorted, x)
		p.sorted = slices.Insert(p.sorted, i, x)
	}
	p.estOK = false
}

func (p *pathStat) drop(x float64, keepSorted bool) {
	p.n--
	lx := math.Log(x)
	p.sum -= x
	p.sumSq -= x * x
	p.sumLn -= lx
	p.sumLnSq -= lx * lx
	if keepSorted {
		if i, ok := slices.BinarySearch(p.sorted, x); ok {
			p.sorted = slices.Delete(p.sorted, i, i+1)
		}
	}
	if p.n == 0 { // no rounding residue once empty
		p.sum, p.sumSq, p.sumLn, p.sumLnSq = 0, 0, 0, 0
	}
	p.estOK = false
}

func (p *pathStat) resetSums() {
	p.n = 0
	p.sum, p.sumSq, p.sumLn, p.sumLnSq = 0, 0, 0, 0
	p.estOK = false
}

// entry is one sample in the window over rounds. It points at the pathStat
// it was added to: if that path is removed (and perhaps added again, as a new
// pathStat), evicting the entry touches only the forgotten one.
type entry struct {
	p *pathStat
	x float64
}

// tracker keeps per-path statistics over a sliding window. With Scope Rounds
// the window is the last S observations over all paths; with PerPath it is
// the last S of each path; S = 0 keeps everything.
//
// Add and evict are O(1) (plus O(log S + S) for the sorted copy the trimmed
// Gaussian needs). The running sums drift by rounding when samples are
// subtracted, so every S evictions they are recomputed from the window:
// O(S) work every S rounds, O(1) amortised.
type tracker struct {
	size       int
	perPath    bool
	keepSorted bool
	paths      []*pathStat // active paths in the order they were added
	ring       []entry     // Scope Rounds
	head       int
	full       bool
	evictions  int
	rounds     int // observations so far
}

func newTracker(cfg Config) *tracker {
	t := &tracker{size: *cfg.Window, perPath: cfg.Scope == PerPath}
	t.keepSorted = cfg.Estimator == Gaussian && *cfg.Trim > 0
	if t.size > 0 && !t.perPath {
		t.ring = make([]entry, t.size)
	}
	return t
}

func (t *tracker) find(id PathID) *pathStat {
	for _, p := range t.paths {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (t *tracker) AddPath(id PathID) error {
	if t.find(id) != nil {
		return fmt.Errorf("%w: %d", ErrDuplicatePath, id)
	}
	p := &pathStat{id: id}
	if t.perPath && t.size > 0 {
		p.ring = make([]float64, 0, t.size)
	}
	if t.keepSorted {
		p.sorted = make([]float64, 0, max(t.size, 16))
	}
	t.paths = append(t.paths, p)
	return nil
}

func (t *tracker) RemovePath(id PathID) error {
	for i, p := range t.paths {
		if p.id == id {
			t.paths = slices.Delete(t.paths, i, i+1)
			return nil
		}
	}
	return fmt.Errorf("%w: %d", ErrUnknownPath, id)
}

// observe adds sample x to path id and evicts what falls out of the window.
func (t *tracker) observe(id PathID, x float64) error {
	p := t.find(id)
	if p == nil {
		return fmt.Errorf("%w: %d", ErrUnknownPath, id)
	}
	if err := checkSample(x); err != nil {
		return err
	}
	t.rounds++
	switch {
	case t.size == 0:
		p.add(x, t.keepSorted)
	case t.perPath:
		if len(p.ring) < t.size {
			p.ring = append(p.ring, x)
			p.add(x, t.keepSorted)
			break
		}
		p.drop(p.ring[p.head], t.keepSorted)
		p.ring[p.head] = x
		p.add(x, t.keepSorted)
		p.head = (p.head + 1) % t.size
		if p.head == 0 {
			t.resum(p)
		}
	default:
		if t.full {
			old := t.ring[t.head]
			old.p.drop(old.x, t.keepSorted)
			t.evictions++
		}
		t.ring[t.head] = entry{p, x}
		p.add(x, t.keepSorted)
		t.head++
		if t.head == t.size {
			t.head, t.full = 0, true
		}
		if t.evictions >= t.size {
			t.evictions = 0
			t.resumAll()
		}
	}
	return nil
}

// resum recomputes one path's sums from its own window.
func (t *tracker) resum(p *pathStat) {
	p.resetSums()
	for _, x := range p.ring {
		p.add(x, false)
	}
}

// resumAll recomputes every path's sums from the window over rounds.
func (t *tracker) resumAll() {
	for _, e := range t.ring {
		e.p.resetSums()
	}
	for _, e := range t.ring {
		e.p.add(e.x, false)
	}
}

// unexplored returns the first path (in the order added) with no sample in
// the window, if any: every strategy tries such a path before it ranks.
func (t *tracker) unexplored() (*pathStat, bool) {
	for _, p := range t.paths {
		if p.n == 0 {
			return p, true
		}
	}
	return nil, false
}

// horizon is the T of the confidence bonus: the rounds observed so far,
// replaced by S once there are more (PCM journal, after Eq. 20).
func (t *tracker) horizon() int {
	if t.size > 0 && !t.perPath && t.rounds > t.size {
		return t.size
	}
	return t.rounds
}
