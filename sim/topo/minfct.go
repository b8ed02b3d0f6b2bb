package topo

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Flow is a stream's request in the min-FCT scheme (§3.1): endpoints, the
// bandwidth it asks for (b_f, Mbit/s) and its tolerable delay (t_f, ms) and
// loss (o_f).
type Flow struct {
	Src, Dst   int
	BWMbps     float64
	MaxDelayMs float64
	MaxLoss    float64
}

// MinFCTParams are Algorithm 1's inputs (§4.1: k = 3, α = β = 0.5).
type MinFCTParams struct {
	K          int     // paths in the set
	Candidates int     // size of the default path set P_f (Yen's k shortest by delay)
	Alpha      float64 // weight of delay in Eq. 19
	Beta       float64 // weight of loss in Eq. 19
}

// Candidate is one path of P_f with its A[p] row (Alg. 1 line 4) and weight.
type Candidate struct {
	Path    Path
	BWMbps  float64 // available bandwidth: min over links (Eq. 2, 7)
	DelayMs float64 // Eq. 4
	Loss    float64 // Eq. 5
	Weight  float64 // p_w, Eq. 19
}

// lossFloor keeps Eq. 19 finite on loss-free paths.
const lossFloor = 1e-9

// PathWeight is min-FCT Eq. 19: p_w = α·t_f/t_P + β·o_f/o_P. A path that is
// faster and less lossy than the flow tolerates gets a larger weight.
func PathWeight(f Flow, delayMs, loss, alpha, beta float64) float64 {
	return alpha*f.MaxDelayMs/math.Max(delayMs, 1e-3) + beta*f.MaxLoss/math.Max(loss, lossFloor)
}

// MultiPathBW is Eq. 11a: paths that share no link with another add their
// bandwidth (b̂, Eq. 11c); a group of paths that reuse links counts once,
// with the smallest bandwidth of the group (b̄, Eq. 11b).
func (t *Topology) MultiPathBW(set []Candidate) float64 {
	n := len(set)
	group := make([]int, n)
	for i := range group {
		group[i] = i
	}
	find := func(i int) int {
		for group[i] != i {
			i = group[i]
		}
		return i
	}
	for i := 0; i < n; i++ {
		li := t.PathLinks(set[i].Path)
		for j := i + 1; j < n; j++ {
			for _, l := range t.PathLinks(set[j].Path) {
				if slices.Contains(li, l) {
					group[find(j)] = find(i)
					break
				}
			}
		}
	}
	minBW := map[int]float64{}
	for i := range set {
		g := find(i)
		if v, ok := minBW[g]; !ok || set[i].BWMbps < v {
			minBW[g] = set[i].BWMbps
		}
	}
	total := 0.0
	for _, v := range minBW {
		total += v
	}
	return total
}

// SelectPathSet is Algorithms 1 and 2: the default path set P_f is Yen's
// Candidates shortest paths by delay with their bandwidth (availMbps per
// link: capacity minus what admitted flows hold, Eq. 7), delay and loss;
// fewer than K candidates rejects the flow. Algorithm 2 weighs each path
// with Eq. 19, takes the K heaviest, and while their bandwidth (Eq. 11a) is
// at most b_f swaps the narrowest chosen path for the widest unchosen one,
// giving up when no swap can widen the set; then the K shortest paths are
// used (Alg. 1 line 12). The result is ordered by weight, heaviest first.
func (t *Topology) SelectPathSet(f Flow, availMbps []float64, p MinFCTParams) ([]Candidate, error) {
	if p.K <= 0 {
		return nil, fmt.Errorf("k: %d must be ≥ 1", p.K)
	}
	paths := t.KShortest(f.Src, f.Dst, max(p.Candidates, p.K), t.DelayWeight())
	if len(paths) == 0 {
		return nil, fmt.Errorf("no path from %s to %s", t.Nodes[f.Src], t.Nodes[f.Dst])
	}
	if len(paths) < p.K {
		return nil, fmt.Errorf("flow %s→%s rejected: %d paths, k = %d", t.Nodes[f.Src], t.Nodes[f.Dst], len(paths), p.K)
	}
	cands := make([]Candidate, len(paths))
	for i, path := range paths {
		bw := math.Inf(1)
		for _, l := range t.PathLinks(path) {
			bw = math.Min(bw, availMbps[l])
		}
		c := Candidate{Path: path, BWMbps: bw, DelayMs: t.DelayMs(path), Loss: t.Loss(path)}
		c.Weight = PathWeight(f, c.DelayMs, c.Loss, p.Alpha, p.Beta)
		cands[i] = c
	}
	shortest := slices.Clone(cands[:p.K])
	byWeight := slices.Clone(cands)
	slices.SortStableFunc(byWeight, func(a, b Candidate) int { return cmp.Compare(b.Weight, a.Weight) })
	chosen := slices.Clone(byWeight[:p.K])
	rest := slices.Clone(byWeight[p.K:])
	for t.MultiPathBW(chosen) <= f.BWMbps {
		ni := argBW(chosen, false)
		wi := argBW(rest, true)
		if wi < 0 || chosen[ni].BWMbps >= rest[wi].BWMbps {
			chosen = nil
			break
		}
		chosen[ni], rest[wi] = rest[wi], chosen[ni]
	}
	if chosen == nil {
		chosen = shortest
	}
	slices.SortStableFunc(chosen, func(a, b Candidate) int { return cmp.Compare(b.Weight, a.Weight) })
	return chosen, nil
}

func argBW(c []Candidate, widest bool) int {
	best := -1
	for i := range c {
		if best < 0 || (widest && c[i].BWMbps > c[best].BWMbps) || (!widest && c[i].BWMbps < c[best].BWMbps) {
			best = i
		}
	}
	return best
}
