package agent

import (
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"
)

// Failback of a striped transfer's pieces, on memnet and fake time: path 0
// (1 MB/s) is ten times path 1 (125 kB/s), both 10 ms round trips.
var failbackRates = []float64{1e6, 125e3}

// failbackRun downloads size bytes striped over failbackRates while events
// (run in its own goroutine from the transfer's start) cut and restore
// path 0; it checks the response intact and returns path 0's received
// bytes sampled every sampleEvery, and whether it had a connection then.
func failbackRun(t *testing.T, size int64, events func(m *memAgent)) ([]int64, []bool) {
	return failbackRunWith(t, events, func(m *memAgent) error {
		resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		h := sha256.New()
		got, err := io.Copy(h, resp.Body)
		if err != nil || got != size || [32]byte(h.Sum(nil)) != patternSum(size) {
			return fmt.Errorf("%d of %d bytes (%v), or not intact", got, size, err)
		}
		return nil
	})
}

// failbackRunWith is failbackRun with the transfer fetch.
func failbackRunWith(t *testing.T, events func(m *memAgent), fetch func(m *memAgent) error) ([]int64, []bool) {
	t.Helper()
	var samples []int64
	var up []bool
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, nil)
		for i, rate := range failbackRates {
			m.n.SetLink(memPath(i).Addr, rate, 64<<10)
			m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := fetch(m); err != nil {
				t.Error(err)
			}
		}()
		evDone := make(chan struct{})
		go func() { defer close(evDone); events(m) }()
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				<-evDone
				return
			case <-tick.C:
				samples = append(samples, m.c.paths[0].bytes.Load())
				up = append(up, m.c.paths[0].current() != nil)
			}
		}
	})
	return samples, up
}

// sampleEvery is how often failbackRun samples path 0's bytes.
const sampleEvery = 100 * time.Millisecond

// TestStripeFailbackAfterCut: a 10 s cut of the best path moves the striped
// transfer to the slow one; once the best path is back, the transfer's
// next pieces return to it within FailbackHold + 2 s of its return (the
// redial of a lost path in short attempts finds it within lostDialMin +
// lostRetryMax: a 4 s attempt found it 1.9 s late), and not before its
// new connection has been up for FailbackHold.
func TestStripeFailbackAfterCut(t *testing.T) {
	samples, up := failbackRun(t, 6<<20, cutPath0)
	checkFailback(t, samples, up)
}

// TestTunnelFailbackAfterCut: the same cut under a CONNECT tunnel opened
// on the best path: the tunnel moves to the slow path for the cut and back
// to the best one within FailbackHold + 2 s of its return, intact.
func TestTunnelFailbackAfterCut(t *testing.T) {
	const size = 4 << 20 // 1 MB before the cut, 1.25 MB during it, 0.7 MB on the slow path after it
	samples, up := failbackRunWith(t, cutPath0, func(m *memAgent) error { return outageTunnel(t, m, size) })
	checkFailback(t, samples, up)
}

// failbackCutAt and failbackCutFor: path 0 is cut failbackCutAt into the
// transfer for failbackCutFor (the 10 s).
const failbackCutAt, failbackCutFor = time.Second, 10 * time.Second

// cutPath0 cuts path 0 at failbackCutAt for failbackCutFor.
func cutPath0(m *memAgent) {
	time.Sleep(failbackCutAt)
	m.n.SetDrop(memPath(0).Addr, true)
	time.Sleep(failbackCutFor)
	m.n.SetDrop(memPath(0).Addr, false)
}

// checkFailback: after cutPath0, path 0 reconnected within lostDialMin +
// lostRetryMax of its return and carried the transfer again within
// FailbackHold + 2 s of its return, not before FailbackHold of its new
// connection.
func checkFailback(t *testing.T, samples []int64, up []bool) {
	t.Helper()
	back := int((failbackCutAt + failbackCutFor) / sampleEvery)
	if len(samples) <= back {
		t.Fatalf("the transfer ended %v in, before the cut ended", time.Duration(len(samples))*sampleEvery)
	}
	conn := back
	for conn < len(up) && !up[conn] {
		conn++
	}
	if conn == len(up) {
		t.Fatalf("path 0 never connected again (%v after it came back)", time.Duration(len(samples)-back)*sampleEvery)
	}
	if redial := time.Duration(conn-back) * sampleEvery; redial > lostDialMin+lostRetryMax {
		t.Errorf("path 0 reconnected %v after its return, want within %v", redial, lostDialMin+lostRetryMax)
	}
	base := samples[conn]
	for i := conn; i < len(samples); i++ {
		if samples[i] > base+64<<10 { // more than pings: the transfer
			sinceConn, sinceBack := time.Duration(i-conn)*sampleEvery, time.Duration(i-back)*sampleEvery
			t.Logf("path 0 reconnected %v after the cut ended and carries the transfer again %v after its return (hold %v)",
				time.Duration(conn-back)*sampleEvery, sinceBack, FailbackHold)
			if sinceBack > FailbackHold+2*time.Second || sinceConn < FailbackHold {
				t.Fatalf("failback %v after the path's return, %v after its new connection; want within hold + 2 s of the return, not before hold %v of the connection",
					sinceBack, sinceConn, FailbackHold)
			}
			return
		}
	}
	t.Fatalf("path 0 never carried the transfer again (%v after it reconnected)", time.Duration(len(samples)-conn)*sampleEvery)
}

// TestStripeFlappingPathGetsNoPieces: the best path, once cut, comes back
// for 3 s and goes again, over and over (each time inside FailbackHold):
// the transfer stays on the slow path and the flapping one carries none
// of it.
func TestStripeFlappingPathGetsNoPieces(t *testing.T) {
	const cutAt, down, up, flaps = time.Second, 3 * time.Second, 3 * time.Second, 3
	samples, _ := failbackRun(t, 5<<20, func(m *memAgent) {
		time.Sleep(cutAt)
		for range flaps {
			m.n.SetDrop(memPath(0).Addr, true)
			time.Sleep(down)
			m.n.SetDrop(memPath(0).Addr, false)
			time.Sleep(up)
		}
	})
	settle := int((cutAt + 2*time.Second) / sampleEvery) // pieces in flight at the first cut
	end := int((cutAt + flaps*(down+up)) / sampleEvery)
	if len(samples) <= end {
		t.Fatalf("the transfer ended %v in, before the flapping ended", time.Duration(len(samples))*sampleEvery)
	}
	if got := samples[end] - samples[settle]; got > 64<<10 {
		t.Fatalf("the flapping path carried %d bytes of the transfer while it flapped", got)
	}
}

// TestLostPathRedial: a path that lost its connection is dialled in short
// attempts (at least lostDialMin, lostDialRTTs of its last round trip,
// never longer than a first dial) with its backoff capped at lostRetryMax;
// a path never connected, or refused, keeps the full values.
func TestLostPathRedial(t *testing.T) {
	const full = 4 * time.Second
	for _, c := range []struct {
		rtt  time.Duration
		want time.Duration
	}{
		{0, full}, // never connected
		{10 * time.Millisecond, lostDialMin},
		{300 * time.Millisecond, 1500 * time.Millisecond},
		{2 * time.Second, full},
	} {
		p := &path{lastRTT: c.rtt}
		if got := p.dialTimeout(full); got != c.want {
			t.Errorf("dialTimeout after a %v RTT = %v, want %v", c.rtt, got, c.want)
		}
	}
	for _, c := range []struct {
		cur  time.Duration
		lost bool
		want time.Duration
	}{
		{100 * time.Millisecond, true, 200 * time.Millisecond},
		{400 * time.Millisecond, true, lostRetryMax},
		{400 * time.Millisecond, false, 800 * time.Millisecond},
		{4 * time.Second, false, 5 * time.Second},
	} {
		if got := nextBackoff(c.cur, 5*time.Second, c.lost); got != c.want {
			t.Errorf("nextBackoff(%v, 5s, lost %v) = %v, want %v", c.cur, c.lost, got, c.want)
		}
	}
}
