package agent

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/linkmodel"
)

// mixPath is one path of a striping test mix: its access link's rate
// (bytes/s each way) and the one-way delay its requests and ACKs take.
type mixPath struct {
	rate  float64
	delay time.Duration
	loss  float64 // random loss of the packets toward ct-client (0: none)
}

// stripeMixTime downloads size bytes through an agent on memnet whose
// paths are mix, striped or not, and returns the fake time it took; the
// response must arrive intact.
// If halveAt > 0, the first path's rate halves that long after the start.
func stripeMixTime(t *testing.T, mix []mixPath, size int64, stripe bool, halveAt time.Duration) time.Duration {
	t.Helper()
	var events func(m *memAgent)
	if halveAt > 0 {
		events = func(m *memAgent) {
			time.Sleep(halveAt)
			m.n.SetLink(memPath(0).Addr, mix[0].rate/2, max(64<<10, int(mix[0].rate*2*mix[0].delay.Seconds())))
		}
	}
	took, _ := stripeMixRun(t, mix, size, stripe, events)
	return took
}

// stripeMixRun is stripeMixTime with events (run in their own goroutine
// from the download's start, nil for none) in place of halveAt; it also
// returns the bytes each path of mix received, its lanes summed into it
// (ifaceBytes).
func stripeMixRun(t *testing.T, mix []mixPath, size int64, stripe bool, events func(m *memAgent)) (time.Duration, []int64) {
	t.Helper()
	var took time.Duration
	var bytes []int64
	synctest.Test(t, func(t *testing.T) {
		m := startShapedAgent(t, len(mix), shapeMix(mix, rttQueue), nil, func(c *ClientConfig) {
			if !stripe {
				c.StripeMin = -1
			}
			c.ListenPacket = lossyListen(c.ListenPacket, mix)
		})
		start := time.Now()
		if events != nil {
			evDone := make(chan struct{})
			go func() { defer close(evDone); events(m) }()
			defer func() { <-evDone }()
		}
		mustGetIntact(t, m, size)
		took = time.Since(start)
		for _, p := range m.c.pathList() {
			t.Logf("path %d (%s): %d bytes, %d requests", p.id, p.Name, p.bytes.Load(), p.requests.Load())
		}
		bytes = m.ifaceBytes(len(mix))
		t.Logf("reinjections %d", m.c.reinjections.Load())
	})
	return took, bytes
}

// lossyListen wraps listen so that the socket of each path with loss in
// mix drops that share of what it receives, drawn by the emulator's link
// model (seeded per path): memnet's links have no random loss.
func lossyListen(listen func(net.IP) (net.PacketConn, error), mix []mixPath) func(net.IP) (net.PacketConn, error) {
	return func(ip net.IP) (net.PacketConn, error) {
		pc, err := listen(ip)
		if err != nil {
			return nil, err
		}
		for i, p := range mix {
			if a, _ := netip.AddrFromSlice(ip); p.loss > 0 && a.Unmap() == memPath(i).Addr {
				name := fmt.Sprintf("p%d", i)
				link := linkmodel.New(linkmodel.Params{Loss: p.loss}, linkmodel.Rand(1, name, true), 0)
				return &lossyConn{PacketConn: pc, link: link, start: time.Now()}, nil
			}
		}
		return pc, nil
	}
}

// lossyConn drops what its link model drops of the packets it reads.
type lossyConn struct {
	net.PacketConn
	mu    sync.Mutex
	link  *linkmodel.Link
	start time.Time
}

func (c *lossyConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil {
			return n, addr, err
		}
		c.mu.Lock()
		v, _, _ := c.link.Admit(time.Since(c.start), n, true)
		c.mu.Unlock()
		if v == linkmodel.Pass {
			return n, addr, nil
		}
	}
}

// mixServerDelay is ct-server's one-way delay toward every path; a path's
// own delay is the other way (memnet delays what an address sends), so its
// round trip is the two summed.
const mixServerDelay = 5 * time.Millisecond

// shapeMix is a shape for startShapedAgent: path i gets mix[i]'s rate
// with a queue of queue(mix[i]) bytes and its delay, ct-server
// mixServerDelay.
func shapeMix(mix []mixPath, queue func(mixPath) int) func(*memnet.Network) {
	return func(n *memnet.Network) {
		for i, p := range mix {
			n.SetLink(memPath(i).Addr, p.rate, queue(p))
			n.SetDelay(memPath(i).Addr, p.delay)
		}
		n.SetDelay(memCTServer.Addr(), mixServerDelay)
	}
}

// rttQueue is a queue of four one-way delays at p's rate (at least
// 64 KiB): a router's buffer sized to the path, so no path is penalised
// by bufferbloat.
func rttQueue(p mixPath) int { return max(64<<10, int(p.rate*4*p.delay.Seconds())) }

// mixRunSpread is how much one mix's transfer time varies between runs:
// the order in which a synctest bubble's goroutines run is not fixed, and
// the 1:10 slow-path-first row was seen at 0.95–1.07 × the best path alone
// (a 10:1 mix can gain at most 10 %). A scheduler that waits on the slow
// path's pieces is 2–3 × slower and fails by far.
const mixRunSpread = 0.06

// mixSumBar is the share of the paths' summed rate a striped download
// must reach on the rows that ask for it (the bar for paths that
// are not lossy). It holds there with room (0.94–0.96 seen); the other
// rows' sums include a slow start over a long round trip or a rate that
// changes, which no scheduler can win back on a download of seconds.
const mixSumBar = 0.9

// TestStripeNeverBelowBestPath: on fake time over memnet, striping a
// download over a mix of paths takes no longer than the same download on
// the best path alone, and on the strict rows (10:1, 20:1 at 10/50 ms,
// 6:3:1) no longer at all (no allowance for the runs' spread) and at
// ≥ mixSumBar of the summed rate.
// The rows span the class the scheduler is built for, not only the
// issue's mixes: rates 1:1 to 20:1, round trips 10 to 300 ms, 2 to 3
// paths, the fast path the far one.
func TestStripeNeverBelowBestPath(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name    string
		mix     []mixPath
		size    int64
		halveAt time.Duration // the best path's rate halves then
		strict  bool          // ≥ the best path alone without allowance
		sum     bool          // ≥ mixSumBar of the summed rate
	}{
		{"equal", []mixPath{{2e6, ms(5), 0}, {2e6, ms(5), 0}}, 8 << 20, 0, false, false},
		{"2:1", []mixPath{{3e6, ms(5), 0}, {1.5e6, ms(10), 0}}, 8 << 20, 0, false, false},
		{"4:2:1", []mixPath{{2.4e6, ms(5), 0}, {1.2e6, ms(15), 0}, {0.6e6, ms(30), 0}}, 8 << 20, 0, false, false},
		{"10:1, 10/25 ms", []mixPath{{4e6, ms(5), 0}, {0.4e6, ms(20), 0}}, 12 << 20, 0, true, true},
		{"10:1, 2.5× RTT", []mixPath{{4e6, ms(5), 0}, {0.4e6, ms(60), 0}}, 12 << 20, 0, true, true},
		{"1:10, slow path first", []mixPath{{4e6, ms(5), 0}, {0.4e6, ms(20), 0}}, 12 << 20, 0, false, false},
		{"2:1, the best path's rate halves", []mixPath{{4e6, ms(5), 0}, {2e6, ms(10), 0}}, 12 << 20, time.Second, false, false},
		{"20:1, the slow path 300 ms", []mixPath{{5e6, ms(5), 0}, {0.25e6, ms(150), 0}}, 12 << 20, 0, false, false},
		{"2:1, 1 % loss on the slower", []mixPath{{3e6, ms(5), 0}, {1.5e6, ms(10), 0.01}}, 8 << 20, 0, false, false},
		{"4:1, the fast path the far one (120 / 10 ms)", []mixPath{{4e6, ms(60), 0}, {1e6, ms(5), 0}}, 12 << 20, 0, false, false},
		{"20:1, 10/50 ms", []mixPath{{5e6, ms(5), 0}, {0.25e6, ms(20), 0}}, 12 << 20, 0, true, true},
		// At the matrix's rates: 1.09–1.10× and 0.96 of the sum in every
		// run since startShapedAgent (the "0.96× once" these rows were
		// allowed before was a near path left in slow start's initial
		// window by the harness), so strict.
		{"10:1 at the matrix's rates (150/20 + 15/50)", []mixPath{{18.75e6, ms(5), 0}, {1.875e6, ms(20), 0}}, 48 << 20, 0, true, true},
		{"10:1 × 2.5 RTT at the matrix's rates (150/20 + 15/130)", []mixPath{{18.75e6, ms(5), 0}, {1.875e6, ms(60), 0}}, 48 << 20, 0, true, true},
		{"6:3:1, not in the matrix (10/20/60 ms)", []mixPath{{3e6, ms(0), 0}, {1.5e6, ms(5), 0}, {0.5e6, ms(25), 0}}, 12 << 20, 0, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			best := stripeMixTime(t, c.mix[:1], c.size, false, c.halveAt)
			mix := c.mix
			if strings.HasPrefix(c.name, "1:10") {
				mix = []mixPath{c.mix[1], c.mix[0]}
			}
			striped := stripeMixTime(t, mix, c.size, true, c.halveAt)
			var sum float64
			for _, p := range c.mix {
				sum += p.rate
			}
			ofSum := float64(c.size) / sum / striped.Seconds()
			t.Logf("best path alone %v, striped %v (%.2f× faster; %.2f of the summed rate)", best, striped,
				best.Seconds()/striped.Seconds(), ofSum)
			spread := mixRunSpread
			if c.strict {
				spread = 0
			}
			if c.sum && ofSum < mixSumBar {
				t.Errorf("striped reached %.2f of the summed rate, want ≥ %.2f", ofSum, mixSumBar)
			}
			if striped.Seconds() > best.Seconds()*(1+spread) {
				t.Errorf("striped %v > best path alone %v (+%.0f %% for the runs' spread)", striped, best, 100*spread)
			}
		})
	}
}

// TestStripeStaleSlowEstimateRecovers: a 2 : 1 mix at the matrix's
// rates (80/20 + 40/30) whose slower path is slow only at the start (its
// requests and ACKs 150 ms late for the first half second), so that the
// stripe's first piece on it measures it far below its rate. Once the path
// is fine it must carry its share again: only pieces correct an estimate,
// and a path that the estimate keeps from pieces must still be measured
// (the matrix's 2 : 1 row once left its second path at 0 %; here, without
// the stripe's probe, it carried 0.00 of the bytes).
func TestStripeStaleSlowEstimateRecovers(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	mix := []mixPath{{10e6, 5 * time.Millisecond, 0}, {5e6, 10 * time.Millisecond, 0}}
	const size = 32 << 20
	var at [2]int64 // the paths' bytes at staleRecovered
	took, bytes := stripeMixRun(t, mix, size, true, func(m *memAgent) {
		m.n.SetDelay(memPath(1).Addr, mix[1].delay+staleDelay)
		time.Sleep(staleFor)
		m.n.SetDelay(memPath(1).Addr, mix[1].delay)
		time.Sleep(staleRecovered - staleFor)
		at = [2]int64(m.ifaceBytes(2))
	})
	share := float64(bytes[1]-at[1]) / float64(bytes[0]+bytes[1]-at[0]-at[1])
	t.Logf("took %v; the slower path's share after %v: %.2f", took, staleRecovered, share)
	if share < staleShareBar {
		t.Errorf("after %v the slower path carried %.2f of the bytes, want ≥ %.2f (its rate's share is 0.33)",
			staleRecovered, share, staleShareBar)
	}
}

// The transient of TestStripeStaleSlowEstimateRecovers; when its slower
// path must be back (the transient, then the stripe's staleness span of a
// second); and the share of the bytes it must carry from then on: its
// rate's share is a third, less the tail, where the faster path alone
// takes the last pieces.
const (
	staleDelay     = 150 * time.Millisecond
	staleFor       = 500 * time.Millisecond
	staleRecovered = staleFor + time.Second
	staleShareBar  = 0.25
)

// TestStripeUselessPathCostsLittle: on fake time over memnet, a download
// striped over a fast path and paths too slow and far to deliver any of
// it in time takes no longer than on the fast path alone, within
// uselessPathSpread, at several rates and round trips (the idle
// experiment's 100/10 + 2/200, and others not in any experiment). The
// striped download still goes through the stripe (the original stream
// running on as the fast path's share, the slow paths' probes), so what
// it may cost is the stripe's own overhead (uselessPathSpread).
func TestStripeUselessPathCostsLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name string
		mix  []mixPath
		size int64
	}{
		{"100/10 + 2/200 (stripe-idle)", []mixPath{{12.5e6, ms(5), 0}, {0.25e6, ms(100), 0}}, 8 << 20},
		{"40/20 + 1/300", []mixPath{{5e6, ms(10), 0}, {0.125e6, ms(150), 0}}, 8 << 20},
		{"20/50 + 0.5/400", []mixPath{{2.5e6, ms(25), 0}, {0.0625e6, ms(200), 0}}, 4 << 20},
		{"100/10 + 2/200 + 1/300", []mixPath{{12.5e6, ms(5), 0}, {0.25e6, ms(100), 0}, {0.125e6, ms(150), 0}}, 8 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			alone := medianMixTime(t, c.mix[:1], c.size, false)
			striped := medianMixTime(t, c.mix, c.size, true)
			t.Logf("medians of %d: alone %v, striped %v (%.3f × the time alone)", uselessPathRuns, alone, striped, striped.Seconds()/alone.Seconds())
			if striped.Seconds() > alone.Seconds()*(1+uselessPathSpread) {
				t.Errorf("striped %v > alone %v (+%.0f %%)", striped, alone, 100*uselessPathSpread)
			}
		})
	}
}

// medianMixTime is the median of uselessPathRuns stripeMixTime runs.
func medianMixTime(t *testing.T, mix []mixPath, size int64, stripe bool) time.Duration {
	t.Helper()
	took := make([]time.Duration, uselessPathRuns)
	for i := range took {
		took[i] = stripeMixTime(t, mix, size, stripe, 0)
	}
	t.Logf("stripe %v: %v", stripe, took)
	slices.Sort(took)
	return took[len(took)/2]
}

// uselessPathRuns: each side of TestStripeUselessPathCostsLittle is the
// median of this many runs. A single run of either side varies with the
// order in which the bubble's goroutines run: the 100/10 path alone took
// 835 ms in most runs and 708 ms in about one of eight, and striped
// 836–887 ms once the stripe's start-up ramp had merged, so one run each
// failed the row about one time in five (2026-11-29, 30 runs); the fast
// path's own luck is not the stripe's cost.
const uselessPathRuns = 3

// uselessPathSpread is what TestStripeUselessPathCostsLittle allows a
// striped download over it: 0.985–1.005 × the time alone in 5 runs of
// each row (2026-11-29), the original stream running on as the fast
// path's share (stripe's Run.take). Cut at 256 KiB, with the fast path's
// next piece requested at its workers' next poll, the first row took
// 1.028–1.034 × and the last 1.029; requested at once, 1.009 and 1.006.
// With the balanced end and lanes merged (session 17) the 20/50 row is
// bimodal: 1.005 in 9 of 12 runs, 1.017–1.021 in 3, a median of three
// unlucky runs; 2.5 % holds that and still fails the 256 KiB cut.
const uselessPathSpread = 0.025

// TestStripeLossyMixGains: the matrix's lossy row (80/20 + 40/30 ms,
// 1 % loss toward ct-client on the slower path, 20 MB) on fake time:
// striped takes at most lossyMixBar of the time on the best path alone
// (medians of uselessPathRuns, as TestStripeUselessPathCostsLittle).
func TestStripeLossyMixGains(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	mix := []mixPath{{10e6, 5 * time.Millisecond, 0}, {5e6, 10 * time.Millisecond, 0.01}}
	const size = 20e6
	alone := medianMixTime(t, mix[:1], size, false)
	striped := medianMixTime(t, mix, size, true)
	t.Logf("medians of %d: alone %v, striped %v (%.3f × the time alone)", uselessPathRuns, alone, striped, striped.Seconds()/alone.Seconds())
	if striped.Seconds() > alone.Seconds()*lossyMixBar {
		t.Errorf("striped %v > %.2f × alone %v", striped, lossyMixBar, alone)
	}
}

// lossyMixBar: striped over the lossy row takes 0.85–0.86 × the time
// alone with the original running on as the fast path's share and the
// lossy path's pieces from the far end, where no late piece holds the
// app (5 runs, 2026-11-29). Before, its late pieces held the window and
// raised λ (stripesched.NextLambda), and the row was bimodal: 0.90–0.93 ×
// when λ came back down, 0.95–0.97 × when it stayed at 4–6 (three runs in
// four with idle31's count of only the original's part, reverted).
const lossyMixBar = 0.9

// TestShapedAgentMinRTT: on startShapedAgent's network a path's first RTT
// sample already has its delay and ct-server's, so its MinRTT is their
// sum from the connection on (serialisation adds up to
// handshakeSerialisation) and stays so through a download. Shaped after
// connecting, the order the stripe tests had, MinRTT there is quic-go's
// 100 ms default (it ignores samples of 0), and the first sample taken
// later could fall between two delays being set: the path's delay alone.
func TestShapedAgentMinRTT(t *testing.T) {
	// The handshake's packets at the slower path's rate: 1252 bytes at
	// 2.5 MB/s are 0.5 ms (0.37 ms more than the sum measured).
	const handshakeSerialisation = 2 * time.Millisecond
	mix := []mixPath{{12.5e6, 15 * time.Millisecond, 0}, {2.5e6, 30 * time.Millisecond, 0}}
	synctest.Test(t, func(t *testing.T) {
		m := startShapedAgent(t, len(mix), shapeMix(mix, rttQueue), nil, nil)
		check := func(when string, upper time.Duration) {
			for i := range mix {
				p := m.memIfacePath(i)
				want := mix[i].delay + mixServerDelay
				got := p.current().ConnectionStats().MinRTT
				t.Logf("%s: path %d MinRTT %v", when, i, got)
				if got < want || got > want+upper {
					t.Errorf("%s: path %d MinRTT %v, want %v to %v", when, i, got, want, want+upper)
				}
			}
		}
		check("connected", handshakeSerialisation)
		mustGetIntact(t, m, 4<<20)
		check("after a download", handshakeSerialisation)
	})
}
