package sweep

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is the part i (0 ≤ I < N) of an experiment's runs that one process
// carries out. Runs are numbered in the runner's fixed order (point, strategy,
// seed); shard i takes every run whose number is i modulo N, so shards are
// disjoint, cover every run, and stay balanced when a few points are slow.
type Shard struct{ I, N int }

// All is the shard of a single-process run.
var All = Shard{I: 0, N: 1}

// ParseShard reads "i/n".
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("--shard %q: want i/n, such as 0/4", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %s: need 0 ≤ i < n", s)
	}
	return Shard{I: i, N: n}, nil
}

// Owns says whether run number k belongs to the shard.
func (s Shard) Owns(k int) bool { return k%s.N == s.I }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }
