package pcm

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/quic-go/quic-go"
)

// TestIdlePathDiesQuietly: a path that dies while idle rests as soon as
// its side probe goes unanswered, so a request the selector would send
// after it goes where the connection is at once instead of waiting out a
// validation; it comes back when a probe of it answers again. With every
// path resting the selector has none, and requests still go, on the
// connection's path. Fake time.
func TestIdlePathDiesQuietly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c := memDial(t, n, 3, Config{})
		ctx := context.Background()
		for _, p := range []int{1, 2, 0} {
			if _, err := c.GetOn(ctx, p, "/bytes/10", nil); err != nil {
				t.Fatal(err)
			}
		}
		n.SetDrop(memPath(1), true)
		// Two probes a second, over two idle paths, each lost after 1 s.
		time.Sleep(3 * time.Second)
		if !c.Resting()[1] {
			t.Fatal("path 1 not resting 3 s after it died idle")
		}
		start := time.Now()
		res, err := c.GetOn(ctx, 1, "/bytes/10", nil)
		if err != nil || res.Path != 0 {
			t.Fatalf("request for the resting path: on %d, %v; want on 0", res.Path, err)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("request for the resting path took %v: it waited for a validation", took)
		}
		// Every path gone from the selector: the request still goes.
		c.mu.Lock()
		c.markDownLocked(0)
		c.markDownLocked(2)
		c.mu.Unlock()
		if _, err := c.Get(ctx, "/bytes/10", nil); err != nil {
			t.Errorf("Get with every path resting: %v", err)
		}
		n.SetDrop(memPath(1), false)
		time.Sleep(2 * time.Minute) // the longest rest, and a probe round
		if c.Resting()[1] {
			t.Error("path 1 still resting after it recovered and probes ran")
		}
	})
}

// TestStallDeviation: the cap holds right after a move (the estimator's
// first sample: deviation half the round trip), never under a growth the
// latest sample shows; and under a growth the probe timeout's round trip
// and deviations (smoothed + ptoDeviations × deviation) come to the
// latest sample, never below it (a false stall on a path whose round
// trip grew) nor a multiple of it. The last row is a late sample on a
// loaded machine (loadcut34's trace): the floor of the whole growth made
// that 2.02 s, and a cut right after it was found only after 6 s.
func TestStallDeviation(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		srtt, dev, latest, want time.Duration
		grew                    bool
	}{
		{150 * ms, 75 * ms, 150 * ms, 150 * ms / deviationCap, false}, // after a move: capped
		{150 * ms, 5 * ms, 152 * ms, 5 * ms, false},                   // steady: quic-go's own
		{60 * ms, 95 * ms, 400 * ms, 85 * ms, true},                   // the round trip grew
		{400 * ms, 80 * ms, 100 * ms, 400 * ms / deviationCap, false}, // it shrank: capped
		{132 * ms, 152 * ms, 604 * ms, 118 * ms, true},                // one late sample under load
	} {
		st := quic.ConnectionStats{SmoothedRTT: tc.srtt, MeanDeviation: tc.dev, LatestRTT: tc.latest}
		got := stallDeviation(st)
		if got != tc.want {
			t.Errorf("srtt %v dev %v latest %v: %v, want %v", tc.srtt, tc.dev, tc.latest, got, tc.want)
		}
		if rt := tc.srtt + ptoDeviations*got; tc.grew && rt != tc.latest {
			t.Errorf("srtt %v latest %v: the probe timeout's round trip is %v, want the latest sample", tc.srtt, tc.latest, rt)
		}
	}
}
