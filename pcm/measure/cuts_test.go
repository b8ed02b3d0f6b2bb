package measure

import (
	"context"
	"testing"
	"time"
)

// TestCutsLoseNoRequest: through the emulator (the UDP relay), with each
// path in turn black-holed through its control API — the active one, the
// first configured one, two in a row — neither pcm.Client nor
// pcm.Transport loses a GET, and requests go to the best live path
// afterwards. Real time on a shared machine: it asserts correctness only;
// the timings are `hetquic pcm cuts`' (pcm/README.md).
func TestCutsLoseNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time emulation: seconds per cut")
	}
	load := DefaultCutLoad()
	load.Every = 20 * time.Millisecond // half the rate: a loaded CI machine
	load.CutAt, load.Between, load.After = time.Second, 1500*time.Millisecond, 2*time.Second
	rows, err := MeasureCuts(context.Background(), []float64{20, 30, 40}, load, []string{APIClient, APITransport})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%s, %s: cut %v; %d sent, %d failed, longest %.0f ms, recovered in %.0f ms, %.2f on the best live path (per path %v)",
			r.Cut, r.API, r.Cuts, r.Sent, r.Failed, r.LongestMs, r.RecoverMs, r.BestShare, r.PerPath)
		if r.Failed > 0 {
			t.Errorf("%s, %s: %d of %d GETs failed: %q", r.Cut, r.API, r.Failed, r.Sent, r.Errors)
		}
	}
}

// TestMeasureCPURuns: the CPU comparison runs and gives positive costs (its
// numbers are `hetquic pcm cuts`', not asserted: real time).
func TestMeasureCPURuns(t *testing.T) {
	c, err := MeasureCPU(context.Background(), 20, 3, 5120)
	if err != nil {
		t.Fatal(err)
	}
	if !(c.PCMus > 0 && c.BaselineUs > 0 && c.Ratio > 0) || c.Rounds != 2 {
		t.Errorf("cost %+v", c)
	}
}
