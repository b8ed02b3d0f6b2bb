package vsreal

import (
	"context"
	"testing"
)

// A small case of the simulator's validation runs both sides: each takes at
// least the two round trips a download needs, and they agree within 2x
// (the measured ratios are in README; this only guards the plumbing).
func TestCompareSimReal(t *testing.T) {
	rows, err := CompareSimReal(context.Background(), []Point{{RTTms: 20}}, []int{200_000}, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.RealMs < 40 || r.SimMs < 40 || r.SimMs/r.RealMs > 2 || r.SimMs/r.RealMs < 0.5 {
		t.Errorf("%+v", r)
	}
}
