package stripe

import (
	"testing"
	"time"
)

// TestRateEstDrop: a path that delivers a round trip's bytes at a time,
// 10 MB/s and then 2.5 MB/s with a megabyte owed throughout, is read
// within dropNoise of 10 MB/s while its rate holds, whatever the bursts,
// and under dropBy of it dropAfter once it fell: the estimate restarts
// from its recent window (drop), 10 → 5.5 → 2.5 MB/s. Its span alone
// (a quarter second here) read 5.5 MB/s then.
func TestRateEstDrop(t *testing.T) {
	const (
		rtt       = 20 * time.Millisecond
		burst     = 50e3 // bytes per ms within a burst: 4 ms of each round trip before the drop
		dropAt    = 600 * time.Millisecond
		dropAfter = 200 * time.Millisecond
		dropNoise = 0.8 // the least the estimate may read of 10 MB/s before the drop
		dropBy    = 0.3 // the most it may read of it dropAfter after
	)
	t0 := time.Unix(0, 0)
	e := rateEst{rtt: rtt}
	e.idle(t0)
	e.peak = 1e6
	// Each round trip: 20 ms × 10 MB/s = 200 kB before the drop, a
	// quarter of it after, arriving burst bytes per ms from its start.
	var lowest, after float64
	for at := time.Duration(0); at < dropAt+dropAfter; at += rtt {
		round := int64(200e3)
		if at >= dropAt {
			round /= 4
		}
		for sent, ms := int64(0), time.Duration(0); sent < round; ms += time.Millisecond {
			n := min(burst, round-sent)
			sent += n
			e.got(n, t0.Add(at+ms), 1e6)
		}
		if at >= 5*rtt && at < dropAt && (lowest == 0 || e.rate < lowest) {
			lowest = e.rate
		}
		after = e.rate
	}
	t.Logf("lowest before the drop %.2f MB/s, %v after it %.2f MB/s", lowest/1e6, dropAfter, after/1e6)
	if lowest < dropNoise*10e6 {
		t.Errorf("before the drop the estimate fell to %.2f MB/s, want ≥ %.2f of 10", lowest/1e6, dropNoise)
	}
	if after > dropBy*10e6 {
		t.Errorf("%v after the drop to 2.5 MB/s the estimate read %.2f MB/s, want ≤ %.2f of 10", dropAfter, after/1e6, dropBy)
	}
}

// TestRateEstStallNotADrop: a window with under MinPiece of the path's
// bytes (a stall, or bytes the stripe does not count) is no rate (5.4
// MB/s after it here, the span's own reading; 2.7 if it counted), and
// a real drop after it is still followed. In the stripe a window that
// read 8 kB/s of a 1.25 MB/s path left it with no pieces, and the
// 8×-drop row of TestStripeFollowsRateChange read 0.80 of the offered
// sum in one run of eight.
func TestRateEstStallNotADrop(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	e := rateEst{rtt: 20 * time.Millisecond}
	e.idle(t0)
	e.peak = 1e6
	for ms := 1; ms <= 300; ms++ { // 10 MB/s
		e.got(10e3, at(ms), 1e6)
	}
	e.got(4e3, at(450), 1e6) // 150 ms with 4 kB
	if e.rate < 5e6 {
		t.Errorf("a 150 ms stall with 4 kB took the estimate to %.2f MB/s, want ≥ 5", e.rate/1e6)
	}
	for ms := 451; ms <= 600; ms += 10 { // 1 MB/s, bytes enough for a window
		e.got(10e3, at(ms), 1e6)
	}
	if e.rate > 5e6+1 || e.rate < 0.9e6 {
		t.Errorf("after 150 ms at 1 MB/s the estimate read %.2f MB/s, want within [0.9, 5]", e.rate/1e6)
	}
}
