package pcm

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
)

// The false-stall tests: a healthy path that is silent, slow or erratic
// is never declared stalled. Each runs a Client on two paths whose
// selector keeps every request on path 0, in fake time, and fails on any
// stall the detector logs.

// thinkFor is how long /think's handler thinks before its answer: many
// stall timeouts, so the detector must poke and hear the poke's ACK.
const thinkFor = 5 * time.Second

// giveUp bounds each request of these tests (fake time), so that a
// detector gone wrong fails them instead of holding them until the test
// binary's timeout.
const giveUp = 30 * time.Second

// stallLog records the stalls a Client logs (failStalled's line), with
// the fake time of each.
type stallLog struct {
	t  *testing.T
	mu sync.Mutex
	at []time.Time
}

func (l *stallLog) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.t.Log(line)
	if strings.Contains(line, "stalled: nothing acknowledged") {
		l.mu.Lock()
		l.at = append(l.at, time.Now())
		l.mu.Unlock()
	}
}

func (l *stallLog) stalls() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

// thinkHandler is origin.Handler with /think, whose answer comes after
// thinkFor.
func thinkHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", origin.Handler(nil))
	mux.HandleFunc("/think", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(thinkFor)
		io.WriteString(w, "thought")
	})
	return mux
}

// quietDial dials a Client on two paths that keeps its requests on path
// 0, serving thinkHandler, with one-way delays rtt-oneWay on path 0 (the
// server's side adds oneWay).
func quietDial(t *testing.T, n *memnet.Network, rtt time.Duration) (*Client, *stallLog) {
	log := &stallLog{t: t}
	c := memDialHandler(t, n, 2, Config{Selector: onePath(0), Logf: log.logf}, thinkHandler())
	n.SetDelay(memPath(0), rtt-oneWay)
	return c, log
}

// think asks for /think on path 0 and checks that it took thinkFor and
// about a round trip, with no failover.
func think(t *testing.T, c *Client, rtt time.Duration) {
	t.Helper()
	start := time.Now()
	var body strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	res, err := c.GetOn(ctx, 0, "/think", &body)
	if err != nil || body.String() != "thought" || res.Failovers != 0 || res.Path != 0 {
		t.Errorf("/think: %q, %+v, %v; want its answer on path 0 with no failover", body.String(), res, err)
		return
	}
	if took := time.Since(start); took < thinkFor || took > thinkFor+2*rtt {
		t.Errorf("/think took %v, want %v and a round trip (%v)", took, thinkFor, rtt)
	}
}

// TestNoFalseStallWhileServerThinks: a handler that thinks for 5 s on a
// healthy path, fast or slow, is waited for: the detector's pokes are
// answered, and no path is declared stalled.
func TestNoFalseStallWhileServerThinks(t *testing.T) {
	for _, rtt := range []time.Duration{20 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				c, log := quietDial(t, n, rtt)
				getOK(t, c, 1000)
				// The waits count the server's own max_ack_delay
				// (quic-go announces 26 ms), read from its transport
				// parameters.
				if got := time.Duration(c.s().moves.maxAckDelay.Load()); got < defaultMaxAckDelay {
					t.Errorf("the server's max_ack_delay read as %v", got)
				}
				think(t, c, rtt)
				if s := log.stalls(); len(s) > 0 {
					t.Errorf("%d false stalls", len(s))
				}
			})
		})
	}
}

// TestNoFalseStallUnderBufferbloat: a download fills a 1 Mbit/s link's
// deep queue, so the round trip grows from 40 ms to several hundred while
// the server thinks on another request and small GETs queue behind the
// download; none of it is a stall. The test checks that the queue did
// grow (bloatRTT).
func TestNoFalseStallUnderBufferbloat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const rtt = 40 * time.Millisecond
		c, log := quietDial(t, n, rtt)
		getOK(t, c, 1000)
		// 1 Mbit/s each way with 60 kB of queue: up to 480 ms of it.
		const rate, queue = 125e3, 60_000
		n.SetLink(memPath(0), rate, queue)
		var wg sync.WaitGroup
		wg.Go(func() { getOK(t, c, 1<<20) })
		wg.Go(func() { think(t, c, 2*time.Second) })
		var most time.Duration
		for range 50 {
			time.Sleep(100 * time.Millisecond)
			most = max(most, c.s().conn.ConnectionStats().SmoothedRTT)
			wg.Go(func() { getOK(t, c, 1000) })
		}
		wg.Wait()
		if most < bloatRTT {
			t.Errorf("the smoothed RTT peaked at %v: the queue never bloated to %v", most, bloatRTT)
		}
		if s := log.stalls(); len(s) > 0 {
			t.Errorf("%d false stalls (smoothed RTT up to %v)", len(s), most)
		}
	})
}

// bloatRTT is the least peak of the smoothed RTT that shows the
// bufferbloat test's queue filled: ten times the path's 40 ms.
const bloatRTT = 400 * time.Millisecond

// TestNoFalseStallWhileDelayGrows: the one-way delays of path 0 and the
// server grow from 20 ms to 200 ms over three seconds (a queue building
// up: RTT 40 → 400 ms) while the server thinks and small GETs go out;
// no stall.
func TestNoFalseStallWhileDelayGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c, log := quietDial(t, n, 40*time.Millisecond)
		getOK(t, c, 1000)
		var wg sync.WaitGroup
		wg.Go(func() { think(t, c, 400*time.Millisecond) })
		const steps, from, to = 300, 20 * time.Millisecond, 200 * time.Millisecond
		for i := range steps {
			d := from + (to-from)*time.Duration(i+1)/steps
			n.SetDelay(memPath(0), d)
			n.SetDelay(memServer.Addr(), d)
			time.Sleep(10 * time.Millisecond)
			if i%20 == 0 {
				wg.Go(func() { getOK(t, c, 1000) })
			}
		}
		wg.Wait()
		if s := log.stalls(); len(s) > 0 {
			t.Errorf("%d false stalls", len(s))
		}
	})
}

// TestNoFalseStallOnJitteryPath: path 0's one-way delay jumps between 5
// and 95 ms every 10 ms (seeded), while the server thinks and small GETs
// go out; no stall.
func TestNoFalseStallOnJitteryPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c, log := quietDial(t, n, 50*time.Millisecond)
		getOK(t, c, 1000)
		rng := rand.New(rand.NewPCG(29, 1))
		var wg sync.WaitGroup
		wg.Go(func() { think(t, c, 200*time.Millisecond) })
		for i := range 600 {
			n.SetDelay(memPath(0), time.Duration(5+rng.IntN(91))*time.Millisecond)
			time.Sleep(10 * time.Millisecond)
			if i%10 == 0 {
				wg.Go(func() { getOK(t, c, 1000) })
			}
		}
		wg.Wait()
		if s := log.stalls(); len(s) > 0 {
			t.Errorf("%d false stalls", len(s))
		}
	})
}

// getOK fetches /bytes/size on path 0 and checks the body and that no
// failover happened.
func getOK(t *testing.T, c *Client, size int) {
	t.Helper()
	var body strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	res, err := c.GetOn(ctx, 0, fmt.Sprintf("/bytes/%d", size), &body)
	if err != nil || body.Len() != size || res.Failovers != 0 {
		t.Errorf("GET of %d bytes: %d bytes, %d failovers, %v", size, body.Len(), res.Failovers, err)
	}
}

// TestStallFoundSoonerOnSlowPaths: on three paths of 110 / 120 / 150 ms
// under a steady load, a cut of the active path is declared a stall
// within a round trip (the last ACKs on their way), the poke's silence,
// its ACK's wait and two detector ticks — before 8 × SRTT, the fixed
// rule before (880 ms on the 110 ms path). Measured: 460–610 ms; with
// 8 × SRTT, 850–950 ms. The selector is Fixed, on the 110 ms path: the
// default's re-probes may take the connection off the path as it is cut,
// and a move needs no stall (CI at load 8: the cut met a move to the
// 120 ms path, then 0 stalls).
func TestStallFoundSoonerOnSlowPaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		log := &stallLog{t: t}
		tr, _, base := memTransport(t, n, origin.Handler(nil), Config{Logf: log.logf, Strategy: pathsel.Config{Strategy: pathsel.Fixed}})
		rtts := []time.Duration{110 * time.Millisecond, 120 * time.Millisecond, 150 * time.Millisecond}
		for i, r := range rtts {
			n.SetDelay(memPath(i), r-oneWay)
		}
		steadyGets(t, tr, base, 2*time.Second, time.Hour, nil)
		c := tr.origins[memServer.String()].c
		var cutAt time.Time
		var bound, fixed time.Duration
		r := steadyGets(t, tr, base, 3*time.Second, 100*time.Millisecond, func() {
			w := c.stallWaits()
			rtt := rtts[c.Active()]
			bound = rtt + w.pokeAfter + w.ackWait + 2*c.cfg.StallTimeout/stallTicks
			fixed = fixedStallRTTs * c.s().conn.ConnectionStats().SmoothedRTT
			cutAt = time.Now()
			n.SetDrop(memPath(c.Active()), true)
		})
		s := log.stalls()
		if r.failed > 0 || len(s) == 0 {
			t.Fatalf("%d of %d failed, %d stalls; want none failed and a stall", r.failed, r.sent, len(s))
		}
		found := s[0].Sub(cutAt)
		t.Logf("stall found %v after the cut (bound %v; 8 × SRTT %v); longest request %v", found, bound, fixed, r.longest)
		if found > bound || found >= fixed {
			t.Errorf("stall found %v after the cut, want ≤ %v and < 8 × SRTT (%v)", found, bound, fixed)
		}
	})
}

// fixedStallRTTs is the stall timeout in smoothed RTTs before the
// detector waited for its poke's ACK: the slow paths' stall must now be
// found sooner than that.
const fixedStallRTTs = 8

// TestStallFoundAfterIdle: the detector sleeps while a client has nothing
// to watch (detectStalls); the first request after a long idle time, on a
// path cut meanwhile, wakes it, and the stall is found as soon as on a
// busy client (the stall timeout and two ticks) and the request replayed.
func TestStallFoundAfterIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		log := &stallLog{t: t}
		c := memDial(t, n, 2, Config{Logf: log.logf, Probes: Probes{Off: true}})
		for i := range 2 {
			n.SetDelay(memPath(i), idleRTT-oneWay)
		}
		getOK(t, c, 5120)
		time.Sleep(idleFor)
		n.SetDrop(memPath(c.Active()), true)
		bound := c.stallTimeout() + 2*c.cfg.StallTimeout/stallTicks
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), giveUp)
		defer cancel()
		res, err := c.GetOn(ctx, c.Active(), "/bytes/5120", nil)
		s := log.stalls()
		if err != nil || res.Failovers != 1 || len(s) == 0 {
			t.Fatalf("GET after %v idle on a cut path: %+v, %v, %d stalls; want it replayed after one stall", idleFor, res, err, len(s))
		}
		t.Logf("stall found %v after the request began (bound %v)", s[0].Sub(start), bound)
		if found := s[0].Sub(start); found > bound {
			t.Errorf("stall found %v after the request began, want ≤ %v", found, bound)
		}
	})
}

// idleFor is the idle time of TestStallFoundAfterIdle: hundreds of the
// detector's ticks, within the connection's idle timeout (30 s), and
// idleRTT its paths' round trip.
const (
	idleFor = 20 * time.Second
	idleRTT = 100 * time.Millisecond
)
