package stripe

import (
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// TestRateEstDrop: a path that delivers a round trip's bytes at a time,
// 10 MB/s and then 2.5 MB/s with a megabyte owed throughout, is never
// seen to fall while its rate holds, whatever the bursts, and is seen
// to fall (fell, for Run.trim) within dropAfter of the drop, at its new
// rate, while its estimate (span: a quarter second here) still reads
// about twice that.
func TestRateEstDrop(t *testing.T) {
	const (
		rtt       = 20 * time.Millisecond
		burst     = 50e3 // bytes per ms within a burst: 4 ms of each round trip before the drop
		dropAt    = 600 * time.Millisecond
		dropAfter = 140 * time.Millisecond
	)
	t0 := time.Unix(0, 0)
	e := rateEst{rtt: rtt}
	e.idle(t0)
	e.peak = 1e6
	// Each round trip: 20 ms × 10 MB/s = 200 kB before the drop, a
	// quarter of it after, arriving burst bytes per ms from its start.
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
		if at < dropAt && e.fell != 0 {
			t.Fatalf("at %v, the rate steady, the path was seen to fall to %.2f MB/s", at, e.fell/1e6)
		}
	}
	t.Logf("%v after the drop: fell %.2f MB/s, estimate %.2f", dropAfter, e.fell/1e6, e.rate/1e6)
	if e.fell < 2e6 || e.fell > 3e6 {
		t.Errorf("%v after the drop to 2.5 MB/s the path was seen at %.2f MB/s (0: not seen), want within [2, 3]", dropAfter, e.fell/1e6)
	}
}

// TestRateEstDropBehindQueue: a path whose smoothed round trip (38 ms)
// counts a queue at its bottleneck, least round trip 10 ms, halves from
// 10 to 5 MB/s with its last 600 kB owed (all requested: the end of a
// download, when trim moves the original's rest): it is seen to fall
// before those bytes are in, judged in its least round trips. In its
// smoothed ones it owed under two at 5 MB/s (380 kB) before its recent
// window read the fall, and was never seen: the traced halving row of
// TestStripeFollowsRateChange (its numbers scaled).
func TestRateEstDropBehindQueue(t *testing.T) {
	at := msAt
	e := &rateEst{rtt: 38 * time.Millisecond, minRTT: 10 * time.Millisecond}
	e.idle(at(0))
	e.peak = 2e6
	for ms := 1; ms <= 300; ms++ { // 10 MB/s, 2 MB owed throughout
		e.got(10e3, at(ms), 2e6)
	}
	if e.fell != 0 {
		t.Fatalf("at 10 MB/s the path was seen to fall to %.2f MB/s", e.fell/1e6)
	}
	queued, seen := int64(600e3), 0
	for ms := 301; queued > 0; ms++ { // 5 MB/s until the 600 kB are in
		queued -= 5e3
		e.got(5e3, at(ms), queued)
		if e.fell > 0 && seen == 0 {
			seen = ms
			t.Logf("seen to fall at %d ms, %.2f MB/s, %d kB owed, estimate %.2f MB/s", ms, e.fell/1e6, queued/1e3, e.rate/1e6)
		}
	}
	if seen == 0 {
		t.Errorf("a halving with 600 kB owed was never seen (estimate %.2f MB/s at the end)", e.rate/1e6)
	}
}

// TestRateEstStallNotADrop: a window with under MinPiece of the path's
// bytes (a stall, or bytes the stripe does not count) is no rate, nor is
// a window that begins before a cut's round trip has passed; a real drop
// after them is still seen.
func TestRateEstStallNotADrop(t *testing.T) {
	at := msAt
	e := busyEst()
	for ms := 1; ms <= 300; ms++ { // 10 MB/s
		e.got(10e3, at(ms), 1e6)
	}
	e.got(4e3, at(450), 1e6) // 150 ms with 4 kB
	if e.fell != 0 {
		t.Errorf("a 150 ms stall with 4 kB read as a fall to %.2f MB/s", e.fell/1e6)
	}
	e.cut(at(450)) // a copy ended short: until 470 its bytes may still come
	for ms := 451; ms <= 560; ms += 10 {
		e.got(10e3, at(ms), 1e6) // 1 MB/s
	}
	if e.fell != 0 {
		t.Errorf("a window from before the cut's round trip read as a fall to %.2f MB/s", e.fell/1e6)
	}
	for ms := 570; ms <= 700; ms += 10 {
		e.got(10e3, at(ms), 1e6)
	}
	if e.fell < 0.9e6 || e.fell > 1.1e6 {
		t.Errorf("after 250 ms at 1 MB/s the path was seen at %.2f MB/s, want within [0.9, 1.1]", e.fell/1e6)
	}
}

// TestRateEstLately: what a path delivered over its last d, read at the
// caller's now (unload): its new rate a window after a 5× drop, while
// its estimate still reads it well above; lower as it then stays
// silent; nothing while the busy period is younger than d and a round
// trip.
func TestRateEstLately(t *testing.T) {
	const d = 50 * time.Millisecond
	at := msAt
	e := busyEst()
	if _, ok := e.lately(at(60), d); ok {
		t.Errorf("at 60 ms into the busy period, under d and a round trip, lately gave a reading")
	}
	for ms := 21; ms <= 300; ms++ { // 10 MB/s from the first round trip on
		e.got(10e3, at(ms), 1e6)
	}
	if r, ok := e.lately(at(300), d); !ok || r < 9.5e6 || r > 10.5e6 {
		t.Errorf("at 10 MB/s lately read %.2f MB/s (ok %v), want within [9.5, 10.5]", r/1e6, ok)
	}
	for ms := 301; ms <= 360; ms++ { // 2 MB/s
		e.got(2e3, at(ms), 1e6)
	}
	r, _ := e.lately(at(360), d)
	t.Logf("60 ms after a drop to 2 MB/s: lately %.2f MB/s, estimate %.2f", r/1e6, e.rate/1e6)
	if r < 1.9e6 || r > 2.1e6 || e.rate < 2*r {
		t.Errorf("a window after the drop to 2 MB/s lately read %.2f MB/s (estimate %.2f), want within [1.9, 2.1] and under half the estimate", r/1e6, e.rate/1e6)
	}
	if r, _ := e.lately(at(385), d); r < 0.9e6 || r > 1.1e6 {
		t.Errorf("silent for 25 ms of the last 50, lately read %.2f MB/s, want within [0.9, 1.1]", r/1e6)
	}
	if r, _ := e.lately(at(420), d); r != 0 {
		t.Errorf("silent for 60 ms, lately read %.2f MB/s, want 0", r/1e6)
	}
}

// TestRateEstTrimRate: a path that falls from 10 to 2.5 MB/s, its
// original cut (trim) every 90 ms from the moment the fall is seen, is
// judged at its new rate, while fell, whose windows the cuts mute, still
// reads it well above that; a path not seen to fall is judged at its
// estimate, whatever it delivered lately.
func TestRateEstTrimRate(t *testing.T) {
	at := msAt
	e := busyEst()
	for ms := 1; ms <= 300; ms++ { // 10 MB/s
		e.got(10e3, at(ms), 1e6)
	}
	if got := e.trimRate(8e6, at(300)); got != 8e6 {
		t.Errorf("no fall seen: trimRate(8 MB/s) = %.2f MB/s, want the estimate given", got/1e6)
	}
	cut := 0
	for ms := 301; ms <= 600; ms++ { // 2.5 MB/s
		e.got(2.5e3, at(ms), 1e6)
		if e.fell > 0 && (cut == 0 || ms-cut >= 90) {
			e.cut(at(ms))
			cut = ms
		}
	}
	got := e.trimRate(e.rate, at(600))
	t.Logf("300 ms after the fall to 2.5 MB/s, cut every 90 ms: fell %.2f MB/s, estimate %.2f, trimRate %.2f", e.fell/1e6, e.rate/1e6, got/1e6)
	if got < 2.4e6 || got > 2.6e6 {
		t.Errorf("trimRate read the fallen path at %.2f MB/s, want within [2.4, 2.6]", got/1e6)
	}
	if e.fell < 1.5*2.5e6 {
		t.Errorf("fell %.2f MB/s: the cuts did not freeze it, the test no longer shows why trimRate reads lately", e.fell/1e6)
	}
}

// msAt is ms milliseconds after the Unix epoch: the clock the rate
// estimator's tests feed it.
func msAt(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }

// busyEst is the estimator of a path 20 ms away whose busy period starts
// at msAt(0) with 1 MB owed: where the drop tests start.
func busyEst() *rateEst {
	e := &rateEst{rtt: 20 * time.Millisecond}
	e.idle(msAt(0))
	e.peak = 1e6
	return e
}

// TestLossLimited: a path crawls with its queue empty (its loss holds
// it, not its link) while its smoothed RTT is within crawlQueue of its
// least: the lossy near path of agent's TestStripeLossyNearOriginal read
// 1.01×; the first path of TestStripeRidesRateDrop's first row read 4×
// before its drop and 8–20× after; an unknown least RTT says nothing.
func TestLossLimited(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	for _, c := range []struct {
		rtt, minRTT time.Duration
		want        bool
	}{
		{ms(15.2), ms(15), true},   // the lossy near path as it crawled
		{ms(18.75), ms(15), true},  // at crawlQueue exactly
		{ms(18.76), ms(15), false}, // just above
		{ms(20), ms(5), false},     // the rate-drop row's path before its drop
		{ms(99), ms(5), false},     // and after it
		{ms(15), 0, false},         // least RTT not known yet
		{0, ms(15), false},         // smoothed RTT not known yet
	} {
		if got := lossLimited(c.rtt, c.minRTT); got != c.want {
			t.Errorf("lossLimited(%v, %v) = %v, want %v", c.rtt, c.minRTT, got, c.want)
		}
	}
}

// TestRateEstDropLongRoundTrip: the matrix's halving row on sockets
// (100/20 + 50/30 Mbit/s/ms, the first path's rate halving at 1 s), its
// first path's smoothed round trip 70 ms behind its full bottleneck
// queue (least 20 ms), with more owed than the 300 ms it watches
// deliver (Dropped's queue test never the limit): from a drop window
// after the halving until 300 ms after it (trim reads fell when the
// other path runs out of pieces, 100–250 ms after the halving there)
// the fall is seen, at every phase of the estimator's halving of its
// period (got) at the drop. Judged against the estimate at the window's
// end, which holds the window's own bytes, the fall was seen only until
// 164–179 ms after the drop, at every phase, then lost for good (the
// estimate 8.9 MB/s, the window 0.70 of it).
func TestRateEstDropLongRoundTrip(t *testing.T) {
	const (
		rtt   = 70 * time.Millisecond
		until = 300 // ms after the drop
	)
	window := int(stripesched.DropWindow(rtt) / time.Millisecond)
	for dropAt := 1000; dropAt < 1000+int(span(rtt)/time.Millisecond); dropAt += 10 {
		e := &rateEst{rtt: rtt, minRTT: 20 * time.Millisecond}
		e.idle(msAt(0))
		e.peak = 4e6
		for ms := 1; ms < dropAt; ms++ { // 12.5 MB/s, 4 MB owed throughout
			e.got(12.5e3, msAt(ms), 4e6)
			if e.fell != 0 {
				t.Fatalf("drop at %d ms: at %d ms, the rate steady, the path was seen to fall to %.2f MB/s", dropAt, ms, e.fell/1e6)
			}
		}
		queued := int64(3e6)
		for ms := dropAt; ms <= dropAt+until; ms++ { // 6.25 MB/s
			queued -= 6250
			e.got(6250, msAt(ms), queued)
			if ms-dropAt > window && e.fell == 0 {
				t.Errorf("drop at %d ms: %d ms after it, with %d kB owed, the fall was not seen (estimate %.2f MB/s)", dropAt, ms-dropAt, queued/1e3, e.rate/1e6)
				break
			}
		}
	}
}
