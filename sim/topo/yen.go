package topo

import (
	"container/heap"
	"math"
	"slices"
)

// Weight gives a link's cost for shortest-path search.
type Weight func(link int) float64

// DelayWeight weighs links by propagation delay, plus a tiny per-hop cost
// so that zero-delay links still prefer fewer hops.
func (t *Topology) DelayWeight() Weight {
	return func(l int) float64 { return t.Links[l].DelayMs + 1e-6 }
}

// Shortest is Dijkstra from src to dst avoiding the given nodes and links;
// ok is false when dst is unreachable. Ties go to the lower node index, so
// the result is deterministic.
func (t *Topology) Shortest(src, dst int, w Weight, noNode map[int]bool, noLink map[int]bool) (Path, float64, bool) {
	n := len(t.Nodes)
	dist := make([]float64, n)
	prev := make([]int, n)
	for i := range dist {
		dist[i], prev[i] = math.Inf(1), -1
	}
	dist[src] = 0
	pq := &nodeQueue{{src, 0}}
	for pq.Len() > 0 {
		it := heap.Pop(pq).(nodeItem)
		if it.d > dist[it.n] {
			continue
		}
		if it.n == dst {
			break
		}
		for _, e := range t.adj[it.n] {
			if noNode[e.to] || noLink[e.link] {
				continue
			}
			nd := it.d + w(e.link)
			if nd < dist[e.to] || (nd == dist[e.to] && it.n < prev[e.to]) {
				dist[e.to], prev[e.to] = nd, it.n
				heap.Push(pq, nodeItem{e.to, nd})
			}
		}
	}
	if math.IsInf(dist[dst], 1) {
		return nil, 0, false
	}
	var p Path
	for v := dst; v != -1; v = prev[v] {
		p = append(p, v)
	}
	slices.Reverse(p)
	return p, dist[dst], true
}

type nodeItem struct {
	n int
	d float64
}
type nodeQueue []nodeItem

func (q nodeQueue) Len() int { return len(q) }
func (q nodeQueue) Less(i, j int) bool {
	return q[i].d < q[j].d || (q[i].d == q[j].d && q[i].n < q[j].n)
}
func (q nodeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *nodeQueue) Push(x any)   { *q = append(*q, x.(nodeItem)) }
func (q *nodeQueue) Pop() any {
	o := *q
	x := o[len(o)-1]
	*q = o[:len(o)-1]
	return x
}

// KShortest is Yen's algorithm (Yen 1971, min-FCT ref. [29]): up to k
// loop-free paths from src to dst in ascending cost.
func (t *Topology) KShortest(src, dst, k int, w Weight) []Path {
	cost := func(p Path) float64 {
		c := 0.0
		for _, l := range t.PathLinks(p) {
			c += w(l)
		}
		return c
	}
	first, _, ok := t.Shortest(src, dst, w, nil, nil)
	if !ok || k <= 0 {
		return nil
	}
	A := []Path{first}
	type cand struct {
		p Path
		c float64
	}
	var B []cand
	has := func(p Path) bool {
		for _, q := range A {
			if slices.Equal(p, q) {
				return true
			}
		}
		for _, q := range B {
			if slices.Equal(p, q.p) {
				return true
			}
		}
		return false
	}
	for len(A) < k {
		last := A[len(A)-1]
		for i := 0; i+1 < len(last); i++ {
			spur, root := last[i], last[:i+1]
			noLink, noNode := map[int]bool{}, map[int]bool{}
			for _, p := range A {
				if len(p) > i && slices.Equal(p[:i+1], root) {
					noLink[t.LinkBetween(p[i], p[i+1])] = true
				}
			}
			for _, n := range root[:i] {
				noNode[n] = true
			}
			sp, _, ok := t.Shortest(spur, dst, w, noNode, noLink)
			if !ok {
				continue
			}
			full := append(append(Path{}, root[:i]...), sp...)
			if !has(full) {
				B = append(B, cand{full, cost(full)})
			}
		}
		if len(B) == 0 {
			break
		}
		slices.SortStableFunc(B, func(a, b cand) int {
			switch {
			case a.c < b.c:
				return -1
			case a.c > b.c:
				return 1
			}
			return len(a.p) - len(b.p)
		})
		A = append(A, B[0].p)
		B = B[1:]
	}
	return A
}
