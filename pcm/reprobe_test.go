package pcm

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
)

// heardSelector is wishSelector that also records when it first heard a
// sample of path watch after armed was set.
type heardSelector struct {
	wishSelector
	watch pathsel.PathID
	mu    sync.Mutex
	armed bool
	first time.Time // zero: none yet
}

func (s *heardSelector) Observe(p pathsel.PathID, _ float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed && p == s.watch && s.first.IsZero() {
		s.first = time.Now()
	}
	return nil
}

func (s *heardSelector) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = true
}

func (s *heardSelector) heard() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// TestMoveUnderLoadSamplesItsPath: a Client on round trips 20 / 80 /
// 150 ms under a 5 kB GET every 10 ms, on the 20 ms path, whose selector
// then asks for the 80 ms one (a re-probe): the drain moves the whole
// load there, and the selector hears a sample of that path within
// heardWithin of the move, so a selector that finds it worse can take the
// load back. Before (racedBusySwitchLocked alone) every response sent in
// the move's window was withheld, the selector heard nothing of the path
// it kept choosing (here 549 ms; 81 ms now), and on TestHeldOutCuts'
// gen3721/k3/1 the load stayed on the worse path 0.7 s. The responses
// that queued behind the drain's burst stay withheld
// (TestNoSampleQueuesBehindReplays, TestBestLiveAfterBunchedTry), and so
// do all of a move's between near ties: sampled there too, a client on
// 110 / 120 / 150 ms flapped between paths under load
// (TestStallFoundSoonerOnSlowPaths failed 30 of 30).
func TestMoveUnderLoadSamplesItsPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var want atomic.Int32
		sel := &heardSelector{wishSelector: wishSelector{&want}, watch: 1}
		tr, _, base := memTransport(t, n, origin.Handler(nil), Config{Selector: sel})
		rtts := []time.Duration{20 * time.Millisecond, 80 * time.Millisecond, 150 * time.Millisecond}
		for i, r := range rtts {
			n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
		}
		c := dialConfig(t, tr.Config)
		visitPaths(t, c, 1, 2, 0) // each path's round trip known, the load's start on 0
		var movedAt atomic.Int64
		go func() {
			time.Sleep(time.Second)
			sel.arm()
			want.Store(1)
			for c.Active() != 1 {
				time.Sleep(time.Millisecond)
			}
			movedAt.Store(time.Now().UnixNano())
		}()
		steadyGets(t, http.RoundTripper(c), base, 2*time.Second, time.Hour, nil)
		if movedAt.Load() == 0 {
			t.Fatalf("the connection never moved to path 1 under the load")
		}
		moved := time.Unix(0, movedAt.Load())
		heard := sel.heard()
		if heard.IsZero() || heard.Sub(moved) > heardWithin {
			t.Errorf("moved to the 80 ms path under the load; its first sample came %v after the move (zero: never), want within %v",
				heard.Sub(moved), heardWithin)
		}
	})
}

// heardWithin is how soon after a move under load the selector must hear
// of the path it moved to: within the shortest window a move's burst can
// have (followSettleFloor), so a sample withheld for the whole window
// fails. Measured 79–91 ms (the first response of the drain's burst:
// one 80 ms round trip), and up to 192 ms under -race, whose goroutine
// order queues the burst's first responses; 549 ms before.
const heardWithin = followSettleFloor
