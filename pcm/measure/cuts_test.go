package measure

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestCutsLoseNoRequest: through the emulator (the UDP relay), with each
// path in turn black-holed through its control API — the active one, the
// first configured one — neither pcm.Client nor pcm.Transport loses a GET.
// Two cuts in a row: Transport and Client recover (a request sent after
// the second cut succeeds); that no GET is lost there is checked on fake
// time (pcm's TestFailoverInFakeTime), because in real time on a loaded
// machine a failover can take longer than a request's timeout, and a
// test that fails by chance would block every change.
// Real time on a shared machine: it asserts correctness only; the timings
// are `hetquic pcm cuts`' (pcm/RESULTS.md).
func TestCutsLoseNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time emulation: seconds per cut")
	}
	load := DefaultCutLoad()
	load.Every = 20 * time.Millisecond // half the rate: a loaded CI machine
	// The first cut comes during the client's first tries (each a drain
	// and a switch under this load, in its first second): a failover
	// within about a second of a switch can find no path that validates,
	// and the client must then dial again. Before a Client did, a cut at
	// 1 s lost every later GET in 3 of 20 trials.
	load.CutAt, load.Between, load.After = time.Second, 1500*time.Millisecond, 2*time.Second
	rows, err := MeasureCuts(context.Background(), []float64{20, 30, 40}, load, []string{APIClient, APITransport})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%s, %s: cut %v; %d sent, %d failed, longest %.0f ms, recovered in %.0f ms, %.2f on the best live path (per path %v)",
			r.Cut, r.API, r.Cuts, r.Sent, r.Failed, r.LongestMs, r.RecoverMs, r.BestShare, r.PerPath)
		switch {
		case r.Cut == CutTwo && math.IsInf(r.RecoverMs, 1):
			t.Errorf("%s, %s: no request succeeded after the second cut: %q", r.Cut, r.API, r.Errors)
		case r.Cut != CutTwo && r.Failed > 0:
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
