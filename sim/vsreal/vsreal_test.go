package vsreal

import (
	"context"
	"testing"
)

// A small case of the simulator's validation runs both sides: each takes at
// least the two round trips a download needs, and the simulator is neither
// more than 2x slower than the real side nor 4x faster (the measured ratios
// are in README; this only guards the plumbing). The real side is the
// median of three downloads and may only get slower on a loaded machine
// (seen: 224 ms against the simulator's 102 ms at a load of 17), hence the
// wider bound on that side.
func TestCompareSimReal(t *testing.T) {
	rows, err := CompareSimReal(context.Background(), []Point{{RTTms: 20}}, []int{200_000}, 20, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.RealMs < 40 || r.SimMs < 40 || r.SimMs/r.RealMs > 2 || r.SimMs/r.RealMs < 0.25 {
		t.Errorf("%+v", r)
	}
}
