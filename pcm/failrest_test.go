package pcm

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestRedialElsewhereRestsNoCutShortPath: a failover's redial that wins
// on another path than the one its migration was probing stops that
// probe. Path 0 (active) and path 1 (the failover's first choice, on the
// round trip the start-up sweep measured) are cut together; the redial
// tries path 1 first too, and wins on path 2 (not validated) a dial
// stagger later.
//
//   - "cut short": path 1 is the fastest, its probe runs out its
//     validation wait (the floor, 250 ms), and the migration probes path
//     3 (validated, 110 ms) as the redial wins: path 3's probe, cut short
//     20 ms after it left, says nothing against it, and it stays live.
//     Before, it rested with path 1.
//   - "late": path 1 (200 ms) is probed first; the redial wins on path 2
//     (210 ms) 460 ms later, when path 1's probe, though not run out
//     (600 ms), is late (probeLateRTTs round trips): path 1 rests. No
//     path was visited: the server sends on path 0 (backToServersPathLocked
//     has nowhere to go).
func TestRedialElsewhereRestsNoCutShortPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		delays  [4]time.Duration // one way, from each path
		visit   []int            // the paths the connection visits first
		probed  []int            // the paths the migration probes in vain
		resting [4]bool
	}{
		{"cut short", [4]time.Duration{oneWay, 5 * time.Millisecond, oneWay, 100 * time.Millisecond}, []int{3, 0}, []int{1, 3}, [4]bool{true, true, false, false}},
		{"late", [4]time.Duration{oneWay, 190 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}, nil, []int{1}, [4]bool{true, true, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { redialElsewhereCase(t, tc.delays, tc.visit, tc.probed, tc.resting) })
		})
	}
}

func redialElsewhereCase(t *testing.T, delays [4]time.Duration, visit, probed []int, resting [4]bool) {
	pastRealClock()
	n := memnet.New()
	var logs logCount
	roots := memServe(t, n, origin.Handler(nil), nil)
	// The start-up sweep measures every path; no later side probe (one
	// every 100 s) shows path 1 dead before the failover does.
	cfg := memConfig(t, n, 4, Config{Probes: Probes{PerSecond: 0.01}, Logf: logs.logf}, roots)
	for i, d := range delays {
		n.SetDelay(memPath(i), d)
	}
	c := dialConfig(t, cfg)
	time.Sleep(time.Second) // the sweep's answers are in
	visitPaths(t, c, visit...)
	if c.Active() != 0 {
		t.Fatalf("active %d, want 0", c.Active())
	}
	n.SetDrop(memPath(0), true)
	n.SetDrop(memPath(1), true)
	res, err := c.GetOn(context.Background(), 0, "/bytes/100", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != 2 || c.Active() != 2 {
		t.Fatalf("the request ended on path %d, the connection on %d; want both on path 2 (the redial's); log:\n%s", res.Path, c.Active(), logs.String())
	}
	for p := range 4 {
		want := 0
		for _, q := range probed {
			if q == p {
				want = 1
			}
		}
		if got := logs.count(fmt.Sprintf("failover to p%d failed", p)); got != want {
			t.Fatalf("%d failed probes of path %d, want %d; log:\n%s", got, p, want, logs.String())
		}
	}
	if r := c.Resting(); [4]bool(r) != resting {
		t.Errorf("resting %v, want %v; log:\n%s", r, resting, logs.String())
	}
}
