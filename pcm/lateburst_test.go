package pcm

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/pathsel"
)

// TestLateBurstTakenBackSoon: the best path, lossy, carries a steady load
// (a 5 kB GET every 10 ms) until a late loss burst, 50–70 ms of drops,
// leaves its window two to four times its round trip and the selector
// moves the load to a worse path. Its side probes then find its round
// trip as before, and pathsel's burst rule takes it back after
// burstProbes of them: the load must be back on it within one probe turn
// of the path (its next probe in turn, (K − 1)/PerSecond on K paths) and
// lateBurstSlack after the leave. At the probe period the rule's second
// probe came a whole turn after the first: before it was asked early
// (pathsel's ProbeSoon; 2026-12-02, -count=20) the rows failed 124 times
// in 140, the load back 0.8–0.9 s after the leave on two paths and
// 1.3–1.4 s on three (2.3 s on four); with it, and the early probe kept
// while a re-probe by request holds the connection on the path (askEarly),
// 0 in 140. The trivial selectors fail every row (-heldout.policy stay or
// first: the load never settles on the best path, as the connection
// starts on path 0 and the best path is never path 0).
func TestLateBurstTakenBackSoon(t *testing.T) {
	for _, tc := range []struct {
		rtts  []time.Duration
		best  int
		burst time.Duration
	}{
		{ms(45, 20), 1, 50 * time.Millisecond},
		{ms(45, 20), 1, 70 * time.Millisecond},
		{ms(60, 30, 200), 1, 50 * time.Millisecond},
		{ms(60, 30, 200), 1, 70 * time.Millisecond},
		{ms(50, 15, 35), 1, 50 * time.Millisecond},
		{ms(80, 25, 40), 1, 50 * time.Millisecond},
		{ms(70, 20, 120, 45), 1, 60 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%v/burst-%v", tc.rtts, tc.burst), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { lateBurstCase(t, tc.rtts, tc.best, tc.burst) })
		})
	}
}

// The late burst's timing: the load warms up until it settled on the
// best path (warmOnto), and in the load after it the burst comes at
// lateBurstAt; the load is watched for lateBurstWatch after it.
const (
	lateBurstAt    = time.Second
	lateBurstWatch = 3 * time.Second
	// lateBurstSlack is what a return may take beyond the path's probe
	// turn: the second probe (pathsel's burstRecheck, four round trips of
	// the ≤ 30 ms path after the first), its own round trip, and the try's
	// request, with room for the load's 10 ms ticks.
	lateBurstSlack = 250 * time.Millisecond
	// lateBurstRun is the fewest requests in a row (100 ms of the load)
	// that make a leave or a return: fewer are a re-probe by request.
	lateBurstRun = 10
	// lateBurstLoss is the best path's loss, a share of the most it
	// carries the load at (feasibleLoss): with all of it the load also
	// left the path on random loss episodes before and long after the
	// burst, and the leave measured was not the burst's; with none it
	// did not leave in half the runs (2026-12-02, 36 of 68 on 17 rows).
	lateBurstLoss = 0.25
	// lateBurstRaceTurns is the bound in probe turns under -race. There
	// the first sample of the path the load moved to can land after the
	// left path's first probe has come back: [45 / 20 ms]/burst-70ms was
	// back 0.89 s after the leave in one run of -race -count=20
	// (2026-12-02, traced), that probe dropped as one of the path in use
	// (pathsel's ObserveProbe drops a probe of the path last observed).
	// Dropping only a probe of the path both observed and chosen last did
	// not make one turn hold under -race (the same row back 0.77 s after
	// the leave, bound 0.75 s, in 1 of 140 runs), and it doubled
	// TestHeldOutCuts' k4/1 share misses (failover34's note); not landed.
	lateBurstRaceTurns = 2
)

// warmOnto runs the load on c until its last second went on path best
// throughout: the selector has found the lossy best path (a few seconds;
// the connection starts on path 0), or fails after lateBurstWarmMax.
func warmOnto(t *testing.T, c *Client, base string, best int) {
	for range lateBurstWarmMax {
		reqs := heldLoad(c, base, time.Second, nil)
		if !slices.ContainsFunc(reqs, func(r heldReq) bool { return r.path != best }) {
			return
		}
	}
	t.Fatalf("the load did not settle on the best path %d in %d s", best, lateBurstWarmMax)
}

// lateBurstWarmMax is the most seconds the warm-up may take.
const lateBurstWarmMax = 10

// lateBurstCase warms a Client on rtts up, path best lossy (feasibleLoss),
// drops every packet of path best for burst, and checks that a load that
// left it is back on it within a probe turn and lateBurstSlack.
func lateBurstCase(t *testing.T, rtts []time.Duration, best int, burst time.Duration) {
	pastRealClock() // before quic-go takes any timestamp
	k := len(rtts)
	s := heldSetup{rtts: rtts, rates: slices.Repeat([]float64{12.5e6}, k), loss: make([]float64, k)}
	s.loss[best] = lateBurstLoss * feasibleLoss(rtts[best])
	n, cfg := heldNet(t, s, 1, Config{})
	if *heldOutPolicy != "" {
		cfg.Selector = heldPolicy(t) // the trivial selectors: see the test
	}
	c := dialConfig(t, cfg)
	base := "https://" + memServer.String()
	warmOnto(t, c, base, best)
	reqs := heldLoad(c, base, lateBurstAt+lateBurstWatch, func(time.Time) {
		time.AfterFunc(lateBurstAt, func() {
			n.SetDrop(memPath(best), true)
			time.AfterFunc(burst, func() { n.SetDrop(memPath(best), false) })
		})
	})
	left, back := leftAndBack(reqs, best, lateBurstAt)
	turn := time.Duration(float64(k-1) / pathsel.DefaultProbesPerSecond * float64(time.Second))
	t.Logf("left %v, back %v (%v off it), probe turn %v", left, back, back-left, turn)
	for _, r := range reqs {
		if r.err != nil {
			t.Fatalf("request sent at %v: %v", r.sent, r.err)
		}
	}
	bound := turn
	if raceEnabled {
		bound = lateBurstRaceTurns * turn
	}
	if left >= 0 && back-left > bound+lateBurstSlack {
		t.Errorf("a %v burst on path %d: the load left it at %v and was back at %v, %v later; want within %v (probe turns) + %v",
			burst, best, left, back, back-left, bound, lateBurstSlack)
	}
}

// leftAndBack is when the load left path best from at on (the first of
// lateBurstRun requests in a row elsewhere; −1: never), and when it was
// back (the first of lateBurstRun in a row on best after; the load's
// end: never).
func leftAndBack(reqs []heldReq, best int, at time.Duration) (left, back time.Duration) {
	left = -1
	run := 0 // requests in a row on the side looked for
	for i, r := range reqs {
		if r.sent < at || r.path < 0 {
			continue
		}
		if on := r.path == best; on == (left >= 0) {
			run++
		} else {
			run = 0
		}
		if run < lateBurstRun {
			continue
		}
		start := reqs[i-lateBurstRun+1].sent
		if left >= 0 {
			return left, start
		}
		left, run = start, 0
	}
	if left < 0 {
		return -1, -1
	}
	return left, reqs[len(reqs)-1].sent
}
