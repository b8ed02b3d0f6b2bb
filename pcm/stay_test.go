package pcm

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
)

// wishSelector chooses whatever path the test wishes, and learns nothing.
type wishSelector struct{ want *atomic.Int32 }

func (s wishSelector) Choose() (pathsel.PathID, error)       { return pathsel.PathID(s.want.Load()), nil }
func (s wishSelector) Observe(pathsel.PathID, float64) error { return nil }
func (s wishSelector) AddPath(pathsel.PathID) error          { return nil }
func (s wishSelector) RemovePath(pathsel.PathID) error       { return nil }

// TestFailoverStaysUntilItsBurstLands: a failover moves the connection to
// the live path of the least measured round trip, not to the selector's
// choice, and requests that ask the selector (Get) stay there until the
// burst the failover released has landed; an explicit path (GetOn) is
// never held; after the burst the selector chooses again.
func TestFailoverStaysUntilItsBurstLands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var want atomic.Int32
		c := memDial(t, n, 3, Config{Selector: wishSelector{&want}, Logf: t.Logf})
		n.SetDelay(memPath(1), 2*oneWay) // 40 ms round trip
		n.SetDelay(memPath(2), 4*oneWay) // 80 ms
		ctx := context.Background()
		// Every path validated, and measured as the connection leaves it:
		// 2 (80 ms), then 1 (40 ms); it ends on 0 (20 ms).
		visitPaths(t, c, 2, 1, 0)
		n.SetDrop(memPath(0), true)
		done := make(chan error, 1)
		go func() { _, err := c.Get(ctx, "/bytes/5120", nil); done <- err }()
		time.Sleep(100 * time.Millisecond) // the Get is out on path 0
		want.Store(2)                      // the selector now wishes the slowest path
		if err := <-done; err != nil {
			t.Fatalf("the Get across the cut: %v", err)
		}
		if a := c.Active(); a != 1 {
			t.Fatalf("after the failover the connection is on %d, want 1 (the least measured round trip, not the selector's 2)", a)
		}
		res, err := c.Get(ctx, "/bytes/10", nil)
		if err != nil || res.Path != 1 {
			t.Fatalf("a Get right after the failover went on %d (%v), want 1: the failover's burst has not landed", res.Path, err)
		}
		res, err = c.GetOn(ctx, 2, "/bytes/10", nil)
		if err != nil || res.Path != 2 {
			t.Fatalf("GetOn(2) right after the failover went on %d (%v): an explicit path is never held", res.Path, err)
		}
		if res, err = c.GetOn(ctx, 1, "/bytes/10", nil); err != nil || res.Path != 1 {
			t.Fatalf("GetOn(1): on %d (%v)", res.Path, err)
		}
		time.Sleep(2 * time.Second) // the burst's window, and a stall timeout, are over
		if res, err = c.Get(ctx, "/bytes/10", nil); err != nil || res.Path != 2 {
			t.Fatalf("a Get once the burst landed went on %d (%v), want the selector's 2", res.Path, err)
		}
	})
}

// TestFirstChoiceRanks: the failover's first path is the live one of the
// least known round trip, a path whose side probe is late after the
// others, and the selector's choice when none is measured.
func TestFirstChoiceRanks(t *testing.T) {
	now := time.Unix(1000, 0)
	ms := time.Millisecond
	type path struct {
		known    time.Duration
		probeOut time.Duration // ago; 0: none out
		down     bool
	}
	for _, tc := range []struct {
		name   string
		paths  []path
		failed int
		want   int
	}{
		{"least known", []path{{known: 20 * ms}, {known: 150 * ms}, {known: 120 * ms}}, 0, 2},
		{"down skipped", []path{{known: 20 * ms}, {known: 150 * ms}, {known: 120 * ms, down: true}}, 0, 1},
		{"late probe ranked after", []path{{known: 110 * ms}, {known: 150 * ms}, {known: 120 * ms, probeOut: 355 * ms}}, 0, 1},
		{"probe out, not late", []path{{known: 110 * ms}, {known: 150 * ms}, {known: 120 * ms, probeOut: 200 * ms}}, 0, 2},
		{"all late: least known", []path{{known: 110 * ms}, {known: 150 * ms, probeOut: time.Second}, {known: 120 * ms, probeOut: time.Second}}, 0, 2},
		{"none measured: the selector's", []path{{known: 20 * ms}, {}, {}}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want atomic.Int32
			want.Store(2)
			c := &Client{cfg: Config{Now: func() time.Time { return now }}, sel: wishSelector{&want}}
			for _, p := range tc.paths {
				ps := &pathState{knownRTT: p.known, down: p.down}
				if p.probeOut > 0 {
					ps.probe.out = now.Add(-p.probeOut)
				}
				c.paths = append(c.paths, ps)
			}
			if got := c.firstChoiceLocked(tc.failed); got != tc.want {
				t.Errorf("firstChoiceLocked(%d) = %d, want %d", tc.failed, got, tc.want)
			}
		})
	}
}

// visitPaths sends a small GET on each path in order, which validates
// them (and measures each as the connection leaves it), then waits a
// second in fake time for the server's new connection IDs, so that a
// failover after it has paths to move to.
func visitPaths(t *testing.T, c *Client, order ...int) {
	t.Helper()
	for _, p := range order {
		if _, err := c.GetOn(context.Background(), p, "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
}

// TestStaySamplesItsPath: a failover's stay lasts until a response of the
// path it moved to has counted, so the selector chooses from what that
// path shows now, not from samples older than the cut. A Client on round
// trips 150 / 90 / 110 ms under a 5 kB GET every 10 ms, whose window for
// the 110 ms path holds a few samples a burst inflated (5.5 × its round
// trip, as TestBestLiveAfterBunchedTry's bunched try can leave them),
// fails over to it when the 90 ms path is cut; most requests after the
// settle go there. When the stay ended as the burst landed, the selector
// was asked before any response of the new path had counted, chose the
// 150 ms path on the inflated window, and the client never came back:
// 0 of 300 requests on the best live path (one CI run of
// TestBestLiveAfterBunchedTry read that).
func TestStaySamplesItsPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		tr, _, base := memTransport(t, n, origin.Handler(nil), Config{})
		for i, r := range []time.Duration{150 * time.Millisecond, 90 * time.Millisecond, 110 * time.Millisecond} {
			n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
		}
		c := dialConfig(t, tr.Config)
		const best, bestLive = 1, 2
		steadyGets(t, c, base, 3*time.Second, time.Hour, nil) // the warm-up
		c.selMu.Lock()
		for range 3 {
			if err := c.sel.Observe(bestLive, 600); err != nil {
				t.Fatal(err)
			}
		}
		c.selMu.Unlock()
		cutThenShare(t, n, c, base, best, bestLive)
	})
}
