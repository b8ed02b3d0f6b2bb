package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/hetquic/hetquic/sim/cc"
)

// TestCoupledTransferThreeFourPaths completes a 4 MB transfer over three
// and four paths of different rates and delays with each coupled
// controller and round robin, and checks that every path carried data,
// that every path's controller is the coupled one asked for, and that a
// second run from the same seed is identical (the simulator is
// reproducible bit for bit).
func TestCoupledTransferThreeFourPaths(t *testing.T) {
	run := func(n int, name string) (time.Duration, []PathStats, *Conn) {
		s := New(7)
		var paths []PathSpec
		for i := range n {
			d := time.Duration(10+10*i) * time.Millisecond
			p := LinkParams{Delay: d, RateBps: float64(5+5*i) * 1e6, QueuePkts: 50, Loss: 0.002}
			fwd := NewLink(s, string(rune('a'+i))+"/fwd", p)
			p.Loss = 0
			rev := NewLink(s, string(rune('a'+i))+"/rev", p)
			paths = append(paths, PathSpec{Name: string(rune('a' + i)), Fwd: []*Link{fwd}, Rev: []*Link{rev}})
		}
		c, err := NewConn(s, ConnConfig{CC: name, Scheduler: "rr"}, paths)
		if err != nil {
			t.Fatal(err)
		}
		fct := complete(t, s, c, 4<<20, 2*time.Minute, 0, nil)
		return fct, c.PathStats(), c
	}
	for _, n := range []int{3, 4} {
		for _, name := range []string{"maco", "olia", "lia", "balia"} {
			fct, st, c := run(n, name)
			for i, p := range st {
				if p.Acked == 0 {
					t.Errorf("%s on %d paths: path %d carried nothing (%+v)", name, n, i, st)
				}
				if got := c.Controller(i).Name(); got != name {
					t.Errorf("path %d controller %q, want %q", i, got, name)
				}
			}
			if name == "maco" {
				for i := range n {
					if _, ok := c.Controller(i).(*cc.MACO); !ok {
						t.Fatalf("path %d: %T", i, c.Controller(i))
					}
				}
			}
			fct2, st2, _ := run(n, name)
			if fct2 != fct || !slices.Equal(st, st2) {
				t.Errorf("%s on %d paths: not reproducible: %v %+v vs %v %+v", name, n, fct, st, fct2, st2)
			}
			t.Logf("%s on %d paths: fct %v, %+v", name, n, fct, st)
		}
	}
}
