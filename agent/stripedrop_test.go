package agent

import (
	"testing"
	"time"
)

// TestStripeRidesRateDrop (issue 30: striped ≥ 0.9 × the sum of the
// path rates): on fake time over memnet, a 20 MB download striped after
// a warm-up reaches rateChangeBar of what the paths offered while one
// path's rate drops 2× or 4× (TestStripeFollowsRateChange's harness).
// The class: the dropping path the fastest (which extends the original
// stream as its share) or a slower one, two or three paths, the other
// path near or far, the drop near the download's end (1 s of ~1.2) or
// well before it (0.6 s). A drop near the end leaves the dropped path
// with what it was asked for at its old rate while the others, with
// nothing left to take, idle.
//
// On main before the original's trim (Run.trim, judged at the recent
// rate: rateEst.drop), medians of three (2026-11-30, fake time): the
// first two rows read 0.817 and 0.884 and fail; the others 0.916, 0.934
// and 0.943 (guards). With it: 0.919–0.948, 0.935–0.939, 0.932–0.958,
// 0.925–0.945 and 0.937–0.944 in 22 runs of the test. Not a row: the
// second of the three halving at 1 s, 0.913 on main and 0.906–0.914 so,
// too near the bar to guard (a slower path's pieces are moved one head
// at a time: Reinject).
//
// The "trimmed" rows, a fall of 4× at 0.8 s and 8× at 1 s of the first
// path, ask trimmedBar: the original's rest follows its path's fall
// there once trim judges the paths at their least round trips and
// balances all of them (Run.trim, stripesched.Trim). Medians of three in
// four alternated runs of those rows (2026-12-01 03:33–03:38 UTC, fake
// time): before, 0.924, 0.902, 0.940, 0.948 and 0.913, 0.913, 0.913,
// 0.918 (the test fails 4 of 4); so, 0.956–0.960 and 0.959 (0 of 4).
// Not a row: the first of the three dropping 8× at 0.8 s, bimodal before
// and so (medians 0.891–0.915 before, 0.881 or 0.960 so, runs 0.872–
// 0.961): in its low mode the original's part is done or moved by about
// 1.14 s (trim finds nothing left), and the fallen path is given pieces
// at ~1.6 s that it delivers at its new 1.22 MB/s (traced, trimfall29's
// notes; not trim's).
func TestStripeRidesRateDrop(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	three := []mixPath{{10e6, ms(0), 0}, {5e6, ms(10), 0}, {2.5e6, ms(25), 0}} // 80/10 + 40/30 + 20/60 Mbit/s/ms
	far := []mixPath{{12.5e6, ms(5), 0}, {6.25e6, ms(25), 0}}                  // 100/20 + 50/60
	near := []mixPath{{12.5e6, ms(5), 0}, {6.25e6, ms(10), 0}}                 // 100/20 + 50/30, the matrix's halving mix
	for _, c := range []struct {
		name   string
		mix    []mixPath
		change rateChange
	}{
		{"80/10 + 40/30 + 20/60, the first drops 4× at 1 s", three, rateChange{0, 0.25, time.Second}},
		{"100/20 + 50/60, the first drops 4× at 1 s", far, rateChange{0, 0.25, time.Second}},
		{"80/10 + 40/30 + 20/60, the first halves at 1 s", three, rateChange{0, 0.5, time.Second}},
		{"80/10 + 40/30 + 20/60, the second halves at 0.6 s", three, rateChange{1, 0.5, 600 * time.Millisecond}},
		{"100/20 + 50/60, the first drops 4× at 0.6 s", far, rateChange{0, 0.25, 600 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) { checkRateChange(t, c.mix, c.change) })
	}
	for _, c := range []struct {
		name   string
		mix    []mixPath
		change rateChange
	}{
		{"80/10 + 40/30 + 20/60, the first drops 4× at 0.8 s", three, rateChange{0, 0.25, 800 * time.Millisecond}},
		{"100/20 + 50/30, the first drops 8× at 1 s", near, rateChange{0, 0.125, time.Second}},
	} {
		t.Run("trimmed: "+c.name, func(t *testing.T) {
			if got := rateChangeMedian(t, c.mix, c.change); got < trimmedBar {
				t.Errorf("striped reached %.3f of the offered sum, want ≥ %.2f (trimmedBar)", got, trimmedBar)
			}
		})
	}
}

// trimmedBar is what TestStripeRidesRateDrop's "trimmed" rows reach
// once the original's rest follows its path's fall (Run.trim): above the
// issue's bar (rateChangeBar), which those rows met in most runs before
// (0.902–0.948), so that it guards the trim (0.956–0.960 so; the test's
// comment).
const trimmedBar = 0.94

// TestStripeRidesSlowerPathDrop is TestStripeRidesRateDrop where the path
// that drops, 2–5× near the end (1 s of ~1.2), is a slower one: not the
// original's, whose rest Run.trim moves, but one with pieces of its own
// queued, which it then delivers at its new rate while the faster paths,
// every byte requested, idle. Two or three paths, the dropping one near
// or far.
//
// On main before Run.unload (its far pieces copied to an idle path,
// judged at what it delivered lately), medians of three in two runs of
// the test (2026-11-30, fake time): 0.872–0.873 and 0.795–0.806 for the
// first and third rows (fail); 0.856–0.901 and 0.906–0.907 for the
// second and fourth (the "second of three halves at 1 s", too
// near the bar to guard then). With it, nine runs each: 0.950–0.955,
// 0.946–0.949, 0.923–0.955 and 0.952–0.964.
func TestStripeRidesSlowerPathDrop(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	three := []mixPath{{10e6, ms(0), 0}, {5e6, ms(10), 0}, {2.5e6, ms(25), 0}} // 80/10 + 40/30 + 20/60 Mbit/s/ms
	for _, c := range []struct {
		name   string
		mix    []mixPath
		change rateChange
	}{
		{"100/20 + 50/30, the second drops 5× at 1 s", []mixPath{{12.5e6, ms(5), 0}, {6.25e6, ms(10), 0}}, rateChange{1, 0.2, time.Second}},
		{"100/20 + 50/60, the second drops 4× at 1 s", []mixPath{{12.5e6, ms(5), 0}, {6.25e6, ms(25), 0}}, rateChange{1, 0.25, time.Second}},
		{"80/10 + 40/30 + 20/60, the third drops 4× at 1 s", three, rateChange{2, 0.25, time.Second}},
		{"80/10 + 40/30 + 20/60, the second halves at 1 s", three, rateChange{1, 0.5, time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) { checkRateChange(t, c.mix, c.change) })
	}
}
