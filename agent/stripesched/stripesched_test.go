package stripesched

import (
	"math"
	"slices"
	"testing"
	"time"
)

func mbit(m float64) float64       { return m * 1e6 / 8 }
func ms(n int) time.Duration       { return time.Duration(n) * time.Millisecond }
func path(m float64, rtt int) Path { return Path{RTT: ms(rtt), Rate: mbit(m)} }

// ramping is p in its start-up (Path.Ramping).
func ramping(p Path) Path { p.Ramping = true; return p }

// guess is p with its rate a guess and queued bytes on the way.
func guess(p Path, queued int64) Path { p.Guess, p.Queued = true, queued; return p }

// TestTake is the decision table: how large a piece a path asks for now.
func TestTake(t *testing.T) {
	fast := path(150, 20) // 150 Mbit/s, 20 ms: PieceSpan is 1.875 MB
	slow := path(15, 50)  // a tenth of it, farther: 187.5 kB pieces
	far := path(2, 200)   // satellite-like
	busyFast := fast      // a fast path whose queue covers its BDP and two pieces
	busyFast.Queued = 2*1_875_000 + 375_000
	lagging := path(60, 20) // fast, its measurement still counting its start-up
	lagging.Peak = mbit(150)
	drains := path(12, 60) // a near path whose queue drains in 0.35 s
	drains.Queued = 512 << 10
	open := Stripe{Window: 16 << 20, Left: 200 << 20}
	for _, c := range []struct {
		name   string
		own    Path
		others []Path
		st     Stripe
		want   int64 // exact, or -1: some size in (0, PieceSize(own)]
	}{
		{"alone: its own piece size", fast, nil, open, PieceSize(fast)},
		{"nothing left", fast, nil, Stripe{Window: 16 << 20}, 0},
		{"the tail is smaller than a piece", fast, nil, Stripe{Window: 16 << 20, Left: 1000}, 1000},
		{"pipeline full: wait", busyFast, []Path{slow}, open, 0},
		{"window full: wait", fast, []Path{slow}, Stripe{Window: 4 << 20, Ahead: 4<<20 - 1000, Left: 100 << 20}, 0},
		{"window nearly full: the piece is cut to it", fast, []Path{slow}, Stripe{Window: 4 << 20, Ahead: 3 << 20, Left: 100 << 20}, 1 << 20},
		{"fastest path: never cut for blocking", fast, []Path{slow}, Stripe{Window: 4 << 20, Left: 100 << 20}, PieceSize(fast)},
		// 15 beside 150: its piece must land before 150 Mbit/s fill the
		// window behind it: (16 MiB − 18.75 MB/s × 50 ms) / 11 ≈ 1.44 MB,
		// more than its own piece size.
		{"slow beside fast, large window: its own piece", slow, []Path{fast}, open, PieceSize(slow)},
		// 4 MiB window: (4194304 − 937500) / 11 = 296073 B ≥ 187500.
		{"slow beside fast, 4 MiB window: its own piece", slow, []Path{fast}, Stripe{Window: 4 << 20, Left: 100 << 20}, PieceSize(slow)},
		// 2 MiB, 1 MiB ahead: (1048576 − 937500) / 11 = 10097 B < MinPiece.
		{"slow beside fast, window nearly full: only blocks, waits", slow, []Path{fast}, Stripe{Window: 2 << 20, Ahead: 1 << 20, Left: 100 << 20}, 0},
		// 2 MiB, 0 ahead: (2097152 − 937500) / 11 = 105422 B.
		{"slow beside fast, small window: a smaller piece", slow, []Path{fast}, Stripe{Window: 2 << 20, Left: 100 << 20}, 105422},
		// Measured at 60 Mbit/s (its start-up counted), 150 by its Peak:
		// cut as beside 150 (at 60 it would take its whole 187.5 kB).
		{"slow beside fast whose measurement lags its peak: cut as beside the peak", slow, []Path{lagging}, Stripe{Window: 2 << 20, Left: 100 << 20}, 105422},
		// far lands 32 KiB in 0.33 s; fast does 4 MB in 0.23 s.
		{"far path beside fast, 4 MB left: waits (tail)", far, []Path{fast}, Stripe{Window: 32 << 20, Left: 4e6}, 0},
		// fast needs 0.45 s for 8 MB: the far path's 32 KiB land first.
		{"far path beside fast, 8 MB left: a small piece", far, []Path{fast}, Stripe{Window: 32 << 20, Left: 8e6}, MinPiece},
		{"far path beside fast, 200 MB left: helps", far, []Path{fast}, Stripe{Window: 32 << 20, Left: 200e6}, -1},
		{"equal paths: each takes its piece", fast, []Path{fast}, open, PieceSize(fast)},
		{"three paths: the slowest waits for the tail", slow, []Path{fast, path(60, 30)}, Stripe{Window: 32 << 20, Left: 1 << 20}, 0},
		{"no rate: nothing", Path{RTT: ms(10)}, nil, open, 0},
		{"rate a guess, beside another path: one probe piece", guess(fast, 0), []Path{slow}, open, MinPiece},
		// A probe under the initial window stalls the sender's slow start
		// for a round trip, which costs where the round trip is long.
		{"rate a guess, far: a probe of twice the initial window", guess(far, 0), []Path{fast}, open, GuessProbe},
		// hidden would cut the far probe to what lands by then (37.5 kB, under the
		// initial window): the probe comes from the object's far end.
		{"rate a guess, far, beside a queue that drains soon: still twice the initial window", guess(far, 0), []Path{drains}, open, GuessProbe},
		{"rate a guess, its probe out: waits", guess(fast, MinPiece), []Path{slow}, open, 0},
		{"rate a guess, alone: its own piece size", guess(fast, 0), nil, open, PieceSize(fast)},
	} {
		got := Take(c.own, c.others, c.st)
		if (c.want >= 0 && got != c.want) || (c.want < 0 && (got <= 0 || got > PieceSize(c.own))) {
			t.Errorf("%s: Take = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestPieceSizeAndWindow(t *testing.T) {
	for _, c := range []struct {
		p    Path
		want int64
	}{
		{path(150, 20), 1_875_000},
		{path(0.5, 20), MinPiece},
		{path(10000, 20), MaxPiece},
	} {
		if got := PieceSize(c.p); got != c.want {
			t.Errorf("PieceSize(%+v) = %d, want %d", c.p, got, c.want)
		}
	}
	for _, c := range []struct {
		name  string
		paths []Path
		want  int64
	}{
		{"unknown rates: the floor", []Path{{RTT: ms(10), Rate: 1}}, MinWindow},
		// Pipelines 375 000 + 2 × 1 875 000 and 93 750 + 2 × 187 500,
		// and 20.625 MB/s × (50 + 100) ms behind the slow path's piece.
		{"150 + 15 Mbit/s, 20 / 50 ms", []Path{path(150, 20), path(15, 50)}, 7_687_500},
		// A slow path whose smallest piece takes 13 × its round trip: pipelines
		// 93 750 + 2 × 1 875 000 and 2 500 + 2 × 32 768, and 19 MB/s × (10 ms +
		// 32 768 B / 250 kB/s) = 2 680 368 B behind its piece.
		{"150 + 2 Mbit/s, 5 / 10 ms: the slow piece's time, not the RTT", []Path{path(150, 5), path(2, 10)}, 6_592_154},
		// The swiftest path's pipeline at its peak, 375 000 + 2 × 1 875 000,
		// the slow path's 93 750 + 2 × 187 500, and the peak's 20.625 MB/s ×
		// 240 ms: planned above its measured rate, the swiftest path's piece
		// may hold the window for its round trip and that pipeline at its
		// peak (held), longer than the slow path's 150 ms.
		{"a path measured below its peak: the window from the peak", []Path{{RTT: ms(20), Rate: mbit(60), Peak: mbit(150)}, path(15, 50)}, 9_543_750},
		// 375 000 + 2 × 1 875 000, and 18.75 MB/s × 120 ms.
		{"a path with no rate is left out", []Path{path(150, 20), {RTT: ms(300)}}, 6_375_000},
		{"10 Gbit/s: the ceiling", []Path{path(10000, 50)}, MaxWindow},
		// A far path at a tenth of its 15 Mbit/s: pipelines 4 125 000 and
		// 23 437 + 2 × 32 768, and 18.94 MB/s × (125 ms + 32 768 B /
		// 187.5 kB/s) behind its piece.
		{"150 + 1.5 Mbit/s, 20 / 125 ms", []Path{path(150, 20), path(1.5, 125)}, 9_890_728},
		// Ramping, it is planned at 375 kB/s: its pipeline 46 875 + 2 ×
		// 37 500, and 18.94 MB/s × (125 ms + 121 875 B / 375 kB/s) behind
		// its pipeline's last piece.
		{"150 + 1.5 Mbit/s ramping, 20 / 125 ms: its planned pipeline", []Path{path(150, 20), ramping(path(1.5, 125))}, 12_768_750},
		// A ramping path nearer than PieceSpan is not planned above its rate.
		{"150 + 1.5 Mbit/s ramping, 20 / 50 ms: as not ramping", []Path{path(150, 20), ramping(path(1.5, 50))}, 8_456_354},
		// Nor is the swiftest path: 4 125 000 + 23 437 + 65 536, and
		// 18.94 MB/s × 299.8 ms.
		{"the swiftest path ramping: as not ramping", []Path{ramping(path(150, 20)), path(1.5, 125)}, 9_890_728},
	} {
		if got := Window(c.paths, 1<<30); got != c.want {
			t.Errorf("%s: Window = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestReinject(t *testing.T) {
	fast := path(150, 20)
	for _, c := range []struct {
		name string
		own  Path
		size int64
		due  float64
		want bool
	}{
		// fast lands 187.5 kB in 20 + 10 ms: 1.5 × 30 + 20 = 65 ms.
		{"the slow path's piece is due in 100 ms: again on the fast one", fast, 187500, 0.1, true},
		{"due in 60 ms: the copy might not land first (ReinjectLead)", fast, 187500, 0.06, false},
		{"due in 40 ms: not worth 20 ms of margin", fast, 187500, 0.04, false},
		{"no rate: never", Path{RTT: ms(1)}, 1, 10, false},
	} {
		if got := Reinject(c.own, c.size, c.due); got != c.want {
			t.Errorf("%s: Reinject = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDueInOrder: a piece on a path that delivers lands once the pieces
// its path sends before it have landed: ct-server sends a path's pieces
// in order.
func TestDueInOrder(t *testing.T) {
	p := path(8, 20) // 1 MB/s
	for _, c := range []struct {
		name  string
		rem   int64
		ahead []int64
		want  float64
	}{
		{"first on its path: its bytes at the rate", 100e3, nil, 0.1},
		{"two ahead of it: all of theirs first", 100e3, []int64{300e3, 500e3}, 0.9},
		{"a smaller one ahead: all of that", 300e3, []int64{50e3}, 0.35},
	} {
		if got := DueInOrder(p, c.rem, c.ahead); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: DueInOrder = %g, want %g", c.name, got, c.want)
		}
	}
}

// TestDueRoundRobin: a piece on a path that delivers lands once every
// piece in flight there has sent as much as it has left (or all of
// theirs): QUIC sends a connection's streams round-robin.
func TestDueRoundRobin(t *testing.T) {
	p := path(8, 20) // 1 MB/s
	for _, c := range []struct {
		name string
		rem  int64
		rems []int64
		want float64
	}{
		{"alone on its path: its bytes at the rate", 100e3, []int64{100e3}, 0.1},
		{"two larger beside it: each sends as much first", 100e3, []int64{100e3, 300e3, 500e3}, 0.3},
		{"a smaller one beside it: all of that", 300e3, []int64{300e3, 50e3}, 0.35},
		{"not among rems (a second copy): its bytes at the rate", 200e3, nil, 0.2},
	} {
		if got := DueRoundRobin(p, c.rem, c.rems); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: DueRoundRobin = %g, want %g", c.name, got, c.want)
		}
	}
}

// TestStalled: a path stalls after StallRounds round trips and
// ReinjectMargin without a byte of the stripe.
func TestStalled(t *testing.T) {
	p := path(8, 20)
	for _, c := range []struct {
		quiet time.Duration
		want  bool
	}{{ms(0), false}, {ms(60), false}, {ms(61), true}, {time.Second, true}} {
		if got := Stalled(p, c.quiet); got != c.want {
			t.Errorf("quiet %v: Stalled = %v, want %v", c.quiet, got, c.want)
		}
	}
}

// TestBalance: own's share of what is left when all paths finish at
// once, their queues drained first.
func TestBalance(t *testing.T) {
	one, two := path(8, 0), path(16, 0) // 1 and 2 MB/s, no round trip: a path starts once its queue drains
	queued := func(p Path, n int64) Path { p.Queued = n; return p }
	for _, c := range []struct {
		name   string
		own    Path
		others []Path
		left   int64
		want   int64
	}{
		{"two equal paths, queues empty: half each", one, []Path{one}, 1e6, 500e3},
		{"2 : 1, queues empty: a third to the slower", one, []Path{two}, 1.5e6, 500e3},
		{"2 : 1: two thirds to the faster", two, []Path{one}, 1.5e6, 1e6},
		{"own 0.2 s of queue behind the other's: 0.1 s less", queued(one, 200e3), []Path{queued(one, 0)}, 1e6, 400e3},
		{"own's queue drains after the other delivers all: nothing", queued(one, 2e6), []Path{one}, 1e6, -1e6},
		{"a third path whose queue drains after the end does not count", one, []Path{one, queued(one, 5e6)}, 1e6, 500e3},
		{"a guessed path does not count", one, []Path{guess(two, 0)}, 1e6, 1e6},
		{"far from the end: more than a piece", two, []Path{one}, 100e6, 66666667},
		{"the round trip counts like a queue", path(8, 100), []Path{one}, 1e6, 450e3},
	} {
		if got := Balance(c.own, c.others, c.left); got < c.want || got > c.want+1 { // +1: rounded up
			t.Errorf("%s: Balance = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestTakeEnd: near the end a path takes no more than its Balance share
// (at least MinPiece), and nothing when the others deliver all that is
// left before its queue drains, the swiftest path too.
func TestTakeEnd(t *testing.T) {
	a, b := path(50, 20), path(50, 20) // 6.25 MB/s, BDP 125 kB, piece 625 kB
	a.Queued, b.Queued = 600e3, 1.2e6
	if got := Take(a, []Path{b}, Stripe{Window: 8 << 20, Left: 500e3}); got != 500e3 {
		t.Errorf("the shorter queue takes %d of 500 kB left, want all (it drains 0.1 s before the other)", got)
	}
	if got := Take(b, []Path{a}, Stripe{Window: 8 << 20, Left: 300e3}); got != 0 {
		t.Errorf("the longer queue takes %d with 300 kB left, want 0 (the other drains first)", got)
	}
	if got := Take(b, []Path{a}, Stripe{Window: 8 << 20, Left: 625e3}); got != MinPiece {
		t.Errorf("a share under MinPiece: takes %d, want MinPiece", got)
	}
}

// TestTakeEndJudgesFastPathAtItsPeak: the views of TestStripeSweep seed
// 7's mix 58 (82/229 + 5/49 Mbit/s/ms, 0.9 % loss on the near path)
// near its end, as logged: the far fast path's own estimate at 6.3–6.5
// of its 10.25 MB/s (Peak, the client's, at 10.2) and its smoothed round
// trip at 324–343 ms of its least 229. Judged so, the lossy path took a
// 55 kB piece 150 kB before the end, the fast path 71 of the last 100 kB
// (Balance's share), and the lossy path the rest; its last pieces came
// ~0.1 s after the fast path had finished. Judged at what the fast path
// may deliver (lifted), the slower path takes nothing there and the fast
// path all that is left.
func TestTakeEndJudgesFastPathAtItsPeak(t *testing.T) {
	fast := Path{RTT: ms(324), Least: ms(229), Rate: 6.31e6, Peak: 10.24e6, Queued: 2757102}
	slow := Path{RTT: ms(57), Least: ms(49), Rate: 545439, Peak: 687492, Queued: 131598}
	st := Stripe{Window: 8 << 20, Ahead: 3807416, Left: 154482, Lambda: 1}
	if got := Take(slow, []Path{fast}, st); got != 0 {
		t.Errorf("the lossy slower path takes %d of %d left, want 0 (the fast path lands it all sooner)", got, st.Left)
	}
	fast = Path{RTT: ms(343), Least: ms(229), Rate: 6.51e6, Peak: 10.24e6, Queued: 2365136}
	slow = Path{RTT: ms(56), Least: ms(49), Rate: 550720, Peak: 687492, Queued: 177398}
	st = Stripe{Window: 8 << 20, Ahead: 2780560, Left: 99939, Lambda: 1}
	if got := Take(fast, []Path{slow}, st); got != st.Left {
		t.Errorf("the fast path takes %d of %d left, want all", got, st.Left)
	}
}

// TestTakeSomeoneTakes pins the progress property: whatever the views,
// while the window and the pipelines have room the path that would deliver
// the next piece soonest takes one, or a stripe could stall with bytes
// left and every worker waiting (it did once, with three paths and a
// short tail: each found the other two faster together).
func TestTakeSomeoneTakes(t *testing.T) {
	rates := []float64{312500, 312500, 156250, 1.25e6}
	rtts := []time.Duration{ms(30), ms(30), ms(60), ms(10)}
	queues := []int64{0, 64 << 10, 96 << 10, 16 << 10}
	for _, n := range []int{2, 3, 4} {
		for left := int64(1); left <= 3<<20; left += 97 << 10 {
			for shift := range 5 {
				views := make([]Path, n)
				for i := range views {
					j := (i + shift) % 4
					views[i] = Path{RTT: rtts[j], Rate: rates[(j+1)%4], Queued: queues[(j+2)%4]}
					if shift == 4 {
						views[i] = Path{RTT: rtts[0], Rate: rates[0]}
					}
				}
				took, room := false, false
				for _, v := range views {
					room = room || v.Queued < v.bdp()+2*min(PieceSize(v), left)
				}
				for i := range views {
					others := append(append([]Path{}, views[:i]...), views[i+1:]...)
					took = took || Take(views[i], others, Stripe{Window: Window(views, left), Left: left}) > 0
				}
				if room && !took {
					t.Fatalf("%d paths %+v, %d bytes left: no path takes a piece", n, views, left)
				}
			}
		}
	}
}

// TestTakeIdleEnd: the end of a stripe whose paths are all idle, from two
// traces of the 40/20 + 20/30 (2 %, four lanes) + 10/60 mix on fake time
// (stall33; us: RTTs in µs, the fast path first, then the lossy path and
// its lanes and the slow path): rules 1–5 gave no path a piece (Balance
// gave the swiftest nothing, the tail rule refused the lanes of a
// shorter round trip), and the stripe stalled 5 s until a keep-alive
// moved an RTT. The path that lands the piece first takes it, and no
// other; rule 6 waits while anything is in flight.
func TestTakeIdleEnd(t *testing.T) {
	views := func(us []int, rates []float64, peak float64) []Path {
		v := make([]Path, len(us))
		for i := range v {
			v[i] = Path{RTT: time.Duration(us[i]) * time.Microsecond, Rate: rates[i]}
		}
		v[0].Peak = peak
		return v
	}
	a := views([]int{31993, 25801, 25566, 26169, 25548, 58072}, []float64{4869623, 582967, 568591, 506689, 588860, 1202675}, 5727300)
	b := views([]int{40198, 25400, 25012, 25442, 24614, 59989}, []float64{4871440, 603326, 604033, 592097, 548683, 1212657}, 4691452)
	for _, c := range []struct {
		paths  []Path
		left   int64
		lambda float64
		taker  int // the path that takes
		want   int64
	}{
		{a, 11185, 1, 0, 11185},    // traced
		{b, 33797, 1, 0, MinPiece}, // traced
		{a, 1749, 1.5, 4, 1749},    // the rest after a MinPiece at λ > 1: the lane of the shortest round trip
	} {
		st := Stripe{Window: 3398025, Left: c.left, Lambda: c.lambda}
		for i, own := range c.paths {
			want := int64(0)
			if i == c.taker {
				want = c.want
			}
			if got := Take(own, slices.Concat(c.paths[:i], c.paths[i+1:]), st); got != want {
				t.Errorf("%d bytes left, λ %g: path %d takes %d, want %d", c.left, c.lambda, i, got, want)
			}
		}
	}
	busy := slices.Clone(a)
	busy[1].Queued = MinPiece
	if got := unstick(busy[0], busy[1:], Stripe{Window: 3398025, Left: 11185}); got != 0 {
		t.Errorf("a lane has bytes in flight: rule 6 gives the swiftest %d, want 0 (the rules look again once they land)", got)
	}
}

// TestLambda: λ grows by LambdaGrow on a blocking up to MaxLambda, decays
// by LambdaDecay otherwise down to 1; 0 (unset) counts as 1.
func TestLambda(t *testing.T) {
	for _, c := range []struct {
		lambda  float64
		blocked bool
		want    float64
	}{
		{0, false, 1},
		{0, true, LambdaGrow},
		{1, true, LambdaGrow},
		{MaxLambda, true, MaxLambda},
		{7, true, MaxLambda},
		{2, false, 2 - LambdaDecay},
		{1.1, false, 1},
	} {
		if got := NextLambda(c.lambda, c.blocked); got != c.want {
			t.Errorf("NextLambda(%g, %v) = %g, want %g", c.lambda, c.blocked, got, c.want)
		}
	}
}

// TestTakeLambda: λ cuts a slower path's piece as if the others were λ
// times faster, and once λ > 1 a slower path that would land a small
// piece first because the fast path's pipeline is full is cut too; the
// path of the highest rate never is.
func TestTakeLambda(t *testing.T) {
	fast, slow := path(150, 20), path(15, 50)
	busyFast := fast
	busyFast.Queued = 2*1_875_000 + 375_000 // 0.2 s of queue: slow lands 32 KiB first
	small := Stripe{Window: 2 << 20, Left: 100 << 20}
	for _, c := range []struct {
		name   string
		own    Path
		others []Path
		lambda float64
		left   int64 // bytes left (0: small's)
		want   int64
	}{
		// (2097152 − 937500) / 11 = 105422 B, as in TestTake.
		{"λ 1: as without λ", slow, []Path{fast}, 1, 0, 105422},
		// (2097152 − 2 × 937500) / (1 + 20) = 10578 B < MinPiece.
		{"λ 2: the slow path waits", slow, []Path{fast}, 2, 0, 0},
		{"λ 1, fast pipeline full: the slow path lands first, uncut", slow, []Path{busyFast}, 1, MinPiece, MinPiece},
		// At λ 4 the fast queue (0.22 s) counts as drained in 0.055 s, before
		// the slow path lands 32 KiB (0.0675 s): not Hidden, and cut.
		{"λ 4, fast pipeline full: cut, waits", slow, []Path{busyFast}, 4, MinPiece, 0},
		{"the highest rate: never cut", fast, []Path{slow}, MaxLambda, 0, PieceSize(fast)},
	} {
		st := small
		st.Lambda = c.lambda
		if c.left > 0 {
			st.Left = c.left
		}
		if got := Take(c.own, c.others, st); got != c.want {
			t.Errorf("%s: Take = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestHidden: a slower path's piece that lands before the others drain
// their queues goes past a full window (Take's rule 0), within MaxWindow
// and the tail rule; the swiftest path's never does.
func TestHidden(t *testing.T) {
	fast, slow := path(150, 20), path(15, 50)
	busyFast := fast
	busyFast.Queued = 9 << 20 // about 0.5 s at 18.75 MB/s
	full := Stripe{Window: 8 << 20, Ahead: 12 << 20, Left: 10 << 20}
	for _, c := range []struct {
		name   string
		own    Path
		others []Path
		st     Stripe
		want   int64
	}{
		// Lands 187.5 kB in 0.15 s, long before the fast queue drains.
		{"window overfull, fast queue long: its own piece", slow, []Path{busyFast}, full, PieceSize(slow)},
		{"the swiftest path: never past the window", busyFast, []Path{slow}, full, 0},
		{"fast queue empty: nothing to hide behind", slow, []Path{fast}, full, 0},
		// λ 8: the fast queue counts as drained in 0.063 s, the slow
		// path's round trip alone is 0.05 s: 0.013 s × 1.875 MB/s < MinPiece.
		{"λ 8: too little time", slow, []Path{busyFast}, Stripe{Window: 8 << 20, Ahead: 12 << 20, Left: 10 << 20, Lambda: 8}, 0},
		{"at MaxWindow: nothing", slow, []Path{busyFast}, Stripe{Window: 8 << 20, Ahead: MaxWindow, Left: 10 << 20}, 0},
	} {
		if got := Take(c.own, c.others, c.st); got != c.want {
			t.Errorf("%s: Take = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestWindowBound: only the window, not the pipeline or the end of the
// object, keeps the path from requesting.
func TestWindowBound(t *testing.T) {
	fast := path(150, 20)
	busy := fast
	busy.Queued = 8 << 20
	for _, c := range []struct {
		name string
		own  Path
		st   Stripe
		want bool
	}{
		{"window full", fast, Stripe{Window: 4 << 20, Ahead: 4 << 20, Left: 1 << 20}, true},
		{"window has room", fast, Stripe{Window: 4 << 20, Ahead: 1 << 20, Left: 1 << 20}, false},
		{"pipeline full", busy, Stripe{Window: 4 << 20, Ahead: 4 << 20, Left: 1 << 20}, false},
		{"nothing left", fast, Stripe{Window: 4 << 20, Ahead: 4 << 20}, false},
	} {
		if got := WindowBound(c.own, c.st); got != c.want {
			t.Errorf("%s: WindowBound = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRamp: the start-up ends after FullRounds round trips in a row
// without FullGrowth, and only then; a round that grows starts the count
// again; a round the stripe limited (0 in rates) counts for neither.
func TestRamp(t *testing.T) {
	for _, c := range []struct {
		name  string
		rates []float64 // the rate after each round trip; 0: a limited round
		full  bool
	}{
		{"doubling: ramps", []float64{1, 2, 4, 8}, false},
		{"one flat round: still ramps", []float64{1, 2, 4, 4.5}, false},
		{"two flat rounds: at its rate", []float64{1, 2, 4, 4.5, 4.9}, true},
		{"growth of 25 % counts as growth", []float64{1, 1.25, 1.5625, 1.95}, false},
		{"creeping under 25 % over two rounds ends it", []float64{1, 1.1, 1.2}, true},
		{"25 % over two rounds is growth (measured from the last growth)", []float64{1, 1.2, 1.3}, false},
		{"a flat round, a growing one, a flat one: still ramps", []float64{1, 2, 2.1, 4, 4.1}, false},
		{"a lower estimate is no growth", []float64{2, 1, 1}, true},
		{"limited rounds between growth and a flat one: still ramps", []float64{1, 2, 0, 0, 0, 2.1}, false},
		{"a limited round breaks no count of flat ones", []float64{1, 2, 2.1, 0, 2.2}, true},
	} {
		var r Ramp
		for _, rate := range c.rates {
			r = r.Round(rate, false, rate == 0)
		}
		if r.Full != c.full {
			t.Errorf("%s: Full = %v, want %v", c.name, r.Full, c.full)
		}
	}
	if r := (Ramp{Full: true}).Round(100, false, false); !r.Full {
		t.Error("an ended start-up began again")
	}
	if r := (Ramp{Full: true}).Round(100, false, true); !r.Full {
		t.Error("a limited round began an ended start-up again")
	}
	if r := (Ramp{}).Round(1, false, false).Round(1.1, true, false); !r.Full {
		t.Error("a path behind what it was asked for in a round without growth still ramps")
	}
	if r := (Ramp{}).Round(1, false, false).Round(2, true, false); r.Full {
		t.Error("a path behind what it was asked for while it doubles (a far slow start) stopped ramping")
	}
}

// TestTakeRamping: a slower path that ramps is planned at StartupGain
// times its estimate (a larger piece, a longer pipeline); the swiftest
// path, a path nearer than PieceSpan, a guess and a path alone are not.
func TestTakeRamping(t *testing.T) {
	fast := path(150, 20)
	slow := path(1.5, 125) // its estimate a tenth of its 15 Mbit/s, its round trip ≥ PieceSpan
	ramping := slow
	ramping.Ramping = true
	open := Stripe{Window: 32 << 20, Left: 200 << 20}
	if got, want := Take(slow, []Path{fast}, open), int64(MinPiece); got != want {
		t.Errorf("slow path at its estimate: Take = %d, want %d", got, want)
	}
	doubled := slow
	doubled.Rate *= StartupGain
	if got, want := Take(ramping, []Path{fast}, open), Take(doubled, []Path{fast}, open); got != want || got <= MinPiece {
		t.Errorf("ramping slow path: Take = %d, want %d (as at twice its estimate, > MinPiece)", got, want)
	}
	// Its pipeline: the estimate's BDP (23 kB) and two pieces (64 KiB)
	// are full, twice the estimate's (47 kB and 64 KiB) are not.
	full := ramping
	full.Queued = 100_000
	if got := Take(full, []Path{fast}, open); got == 0 {
		t.Error("ramping slow path with 100 kB queued waits, want a piece (its pipeline is planned at twice its rate)")
	}
	full.Ramping = false
	if got := Take(full, []Path{fast}, open); got != 0 {
		t.Errorf("slow path at its estimate with 100 kB queued: Take = %d, want 0", got)
	}
	fastRamping := fast
	fastRamping.Ramping = true
	if got, want := Take(fastRamping, []Path{slow}, open), PieceSize(fast); got != want {
		t.Errorf("swiftest path ramping: Take = %d, want its own piece %d", got, want)
	}
	if got, want := Take(ramping, nil, open), Take(slow, nil, open); got != want {
		t.Errorf("ramping path alone: Take = %d, want %d", got, want)
	}
	near := ramping
	near.RTT = PieceSpan - time.Millisecond
	plain := near
	plain.Ramping = false
	if got, want := Take(near, []Path{fast}, open), Take(plain, []Path{fast}, open); got != want {
		t.Errorf("ramping path nearer than PieceSpan: Take = %d, want %d (as at its estimate)", got, want)
	}
	g := guess(ramping, 0)
	if got := Take(g, []Path{fast}, open); got != GuessProbe {
		t.Errorf("ramping path whose rate is a guess: Take = %d, want one probe %d", got, GuessProbe)
	}
	// The fast path delivers what is left in under RampRounds of the slow
	// path's round trips (18.75 MB/s × 0.375 s = 7 MB): no start-up.
	ending := Stripe{Window: 32 << 20, Left: 6 << 20}
	if got, want := Take(ramping, []Path{fast}, ending), Take(slow, []Path{fast}, ending); got != want {
		t.Errorf("ramping slow path near the end: Take = %d, want %d (as at its estimate)", got, want)
	}
	if got, want := Window([]Path{fast, ramping}, 6<<20), Window([]Path{fast, slow}, 6<<20); got != want {
		t.Errorf("near the end, Window = %d with the slow path ramping, want %d (as at its estimate)", got, want)
	}
}

// TestTakeFarSwiftestRamps: the swiftest path, ramping on a round trip of
// PieceSpan or more, keeps a pipeline planned at twice its last round
// trip's rate (Path.Last), which in slow start is about twice its
// estimate; its estimate alone held it 1.3–1.5× per round trip (planned).
// Not once its start-up is over.
func TestTakeFarSwiftestRamps(t *testing.T) {
	far := ramping(path(40, 280)) // measured 5 MB/s: BDP 1.4 MB, pieces 500 kB
	far.Last = 2 * far.Rate       // its last round: twice the estimate's average
	far.Queued = 3 << 20          // its estimate's pipeline (2.4 MB) is full, its plan's (11.6 MB) not
	near := path(9, 12)
	open := Stripe{Window: 32 << 20, Left: 200 << 20}
	if got := Take(far, []Path{near}, open); got <= 0 {
		t.Errorf("ramping far swiftest path, 3 MB queued: Take = %d, want a piece", got)
	}
	done := far
	done.Ramping = false
	if got := Take(done, []Path{near}, open); got != 0 {
		t.Errorf("far swiftest path past its start-up, 3 MB queued: Take = %d, want 0", got)
	}
}

// TestTakeFarSwiftestTakesItsEnd: near the end a ramping far swiftest
// path's share (Balance) counts the rate its slow start is at, twice its
// last round trip's (paced), not its estimate, which averages the slow
// start to a quarter of that: rated so, the near path took the rest, and
// the far path, done with its queue long before, idled while the near
// one drained it (137 Mbit/s / 277 ms beside 9 / 12, 13 MB).
func TestTakeFarSwiftestTakesItsEnd(t *testing.T) {
	far := ramping(path(40, 280)) // measured 5 MB/s
	far.Queued = 3 << 20          // 0.6 s at its estimate, 0.15 s at 4 × it
	near := path(9, 12)
	end := Stripe{Window: 32 << 20, Left: 512 << 10} // 0.47 s on the near path
	if got := Take(far, []Path{near}, end); got != 0 {
		t.Errorf("far swiftest path, no last round: Take = %d, want 0 (the near path delivers the rest first)", got)
	}
	far.Last = 2 * far.Rate
	if got := Take(far, []Path{near}, end); got <= 0 {
		t.Errorf("ramping far swiftest path at twice its estimate, near the end: Take = %d, want a share", got)
	}
}

// TestQueuing: a round trip over a sixteenth above the least is a queue.
func TestQueuing(t *testing.T) {
	for _, c := range []struct {
		rtt, least time.Duration
		want       bool
	}{
		{ms(277), ms(277), false},
		{ms(290), ms(277), false}, // 13 ms: under a sixteenth (17 ms)
		{ms(300), ms(277), true},
		{ms(20), 0, false}, // no least yet
	} {
		if got := Queuing(c.rtt, c.least); got != c.want {
			t.Errorf("Queuing(%v, %v) = %v, want %v", c.rtt, c.least, got, c.want)
		}
	}
}

// TestPacedAllocatesNothing: Take calls paced (and Balance) for every
// piece of every path, so paced copies others, where it lifts one of
// them, into the array take hands it, and neither goes to the heap; and
// the lift is what paced says: the ramping far swiftest path among the
// others at twice its last round.
func TestPacedAllocatesNothing(t *testing.T) {
	far := ramping(path(40, 280))
	far.Last = 2 * far.Rate
	near := path(9, 12)
	others := []Path{path(5, 30), far}
	into := make([]Path, 0, pacedPaths)
	var got []Path
	allocs := testing.AllocsPerRun(100, func() { _, got = paced(near, others, into) })
	if allocs != 0 {
		t.Errorf("paced allocates %v times per call, want 0", allocs)
	}
	if got[1].Rate != StartupGain*far.Last || others[1].Rate != far.Rate {
		t.Errorf("paced rated the far path at %v (others' copy: %v), want %v (others unchanged)", got[1].Rate, others[1].Rate, StartupGain*far.Last)
	}
	if allocs = testing.AllocsPerRun(100, func() { Take(near, others, Stripe{Window: 32 << 20, Left: 8 << 20}) }); allocs != 0 {
		t.Errorf("Take allocates %v times per call, want 0", allocs)
	}
}

// TestWindowPiece: a piece fits a new stream's first window with its
// response head, and no window caps nothing.
func TestWindowPiece(t *testing.T) {
	for _, c := range []struct{ window, want int64 }{
		{1 << 20, 1<<20 - PieceHead}, // quic-go's stream window as ct-client sets it (wire.StreamWindow)
		{0, MaxPiece},                // unbounded
		{PieceHead, MinPiece},        // never under a piece worth a request
	} {
		if got := WindowPiece(c.window); got != c.want {
			t.Errorf("WindowPiece(%d) = %d, want %d", c.window, got, c.want)
		}
	}
}
