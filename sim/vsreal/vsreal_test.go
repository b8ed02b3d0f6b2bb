package vsreal

import (
	"context"
	"strings"
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

// The Markdown table has one row per cell, loss in percent, the ratio of
// the medians to two decimals, and its setting in the caption.
func TestSimVsRealTable(t *testing.T) {
	md := SimVsRealTable([]SimVsReal{{RTTms: 60, Loss: 0.001, SizeBytes: 10_000_000, RealMs: 6000, SimMs: 5000}}, 20, 5).Markdown()
	for _, want := range []string{"One 20 Mbit/s path", "5 downloads each way", "| 60 | 0.1 % | 10 | 6000 | 5000 | 0.83 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}
