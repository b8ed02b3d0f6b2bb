package stripesched

import (
	"testing"
	"time"
)

// TestDropped: a recent rate under DropBelow of the estimate is a drop
// where the path's queue, not the stripe, set it: the path owes
// dropQueues of its queue-free round trips (its least where known) at
// the recent rate.
func TestDropped(t *testing.T) {
	const rate = 10e6
	for _, c := range []struct {
		name       string
		rate       float64
		recent     float64
		queued     int64
		rtt, least time.Duration
		want       bool
	}{
		{"4× lower, 1 MB owed", rate, rate / 4, 1e6, ms(20), 0, true},
		{"just under DropBelow", rate, 0.69 * rate, 1e6, ms(20), 0, true},
		{"a quarter lower: noise", rate, 0.75 * rate, 1e6, ms(20), 0, false},
		{"higher: the estimate follows a rise itself", rate, 2 * rate, 1e6, ms(20), 0, false},
		{"4× lower but owed under two round trips at it: app-limited", rate, rate / 4, 90e3, ms(20), 0, false},
		{"4× lower, owed just two round trips at it", rate, rate / 4, 100e3, ms(20), 0, true},
		{"nothing came", rate, 0, 1e6, ms(20), 0, false},
		// The matrix's halving row (100/20 + 50/30 Mbit/s/ms, the first
		// halving at 1 s; fake time) 140 ms after the drop: its smoothed
		// round trip counts the queue at its bottleneck, its least not.
		{"halved: 6.7 least round trips owed at recent, 1.8 smoothed", 9.77e6, 6.10e6, 405849, 37800 * time.Microsecond, ms(10), true},
		{"halved, judged by the smoothed round trip alone (least unknown)", 9.77e6, 6.10e6, 405849, 37800 * time.Microsecond, 0, false},
		{"4× lower, owed 1.5 least round trips at it: app-limited however long the smoothed one", rate, rate / 4, 37500, ms(60), ms(10), false},
	} {
		if got := Dropped(c.rate, c.recent, c.queued, c.rtt, c.least); got != c.want {
			t.Errorf("%s: Dropped = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct{ rtt, want time.Duration }{{ms(10), DropSpan}, {ms(50), DropSpan}, {ms(80), ms(160)}} {
		if got := DropWindow(c.rtt); got != c.want {
			t.Errorf("DropWindow(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
}

// TestQueueFree: the least round trip where known and below the smoothed
// one, else the smoothed one.
func TestQueueFree(t *testing.T) {
	for _, c := range []struct{ rtt, least, want time.Duration }{
		{ms(38), ms(10), ms(10)}, // a queue at the bottleneck
		{ms(38), 0, ms(38)},      // least not known
		{ms(9), ms(10), ms(9)},   // smoothed under the least (ack delay): no queue to take off
		{0, ms(10), ms(10)},      // smoothed not known
	} {
		if got := QueueFree(c.rtt, c.least); got != c.want {
			t.Errorf("QueueFree(%v, %v) = %v, want %v", c.rtt, c.least, got, c.want)
		}
	}
}

// TestTrim: the original's path, own and the stripe's other paths share
// what the original still owes so that all finish together; own takes
// its share from the far end when that is MinPiece or more and ends the
// original ReinjectMargin sooner or more.
func TestTrim(t *testing.T) {
	queued := func(p Path, n int64) Path { p.Queued = n; return p }
	dropped := path(20, 10)  // the original's path after a 4× drop: 2.5 MB/s
	own := path(40, 30)      // 5 MB/s, 30 ms away, idle
	instant := path(40, 0)   // 5 MB/s, no round trip
	original := path(80, 10) // 10 MB/s
	// 80/10 + 40/30 + 20/60 Mbit/s/ms, the first fallen 8× at 1 s, with
	// 1.56 MB of the original left (fake time; each judged at its least
	// round trip, as agent/stripe's trim does).
	fell8 := Path{RTT: ms(5), Rate: 1.22e6}
	slowest, middle := path(20, 30), path(40, 15)
	for _, c := range []struct {
		name       string
		orig, own  Path
		others     []Path
		left, want int64
	}{
		{"2 : 1, no round trip: a third", original, instant, nil, 3e6, 1e6},
		{"own's round trip: it starts later", original, own, nil, 3e6, 3e6 - 2_100_000},
		{"the original's path fell 4×: own takes most", dropped, own, nil, 1.4e6, 1.4e6 - 516_667},
		{"the original's own queue and round trip do not count: its bytes flow", queued(dropped, 5e6), own, nil, 1.4e6, 1.4e6 - 516_667},
		{"own's queue drains after the original ends: nothing", original, queued(own, 5e6), nil, 3e6, 0},
		{"own's part under MinPiece: nothing", original, instant, nil, 60e3, 0},
		{"the original delivers own's part within ReinjectMargin: nothing", path(800, 10), instant, nil, 2e6, 0},
		{"own's rate a guess: nothing", original, guess(instant, 0), nil, 3e6, 0},
		{"nothing owed", original, instant, nil, 0, 0},
		{"fallen 8×, the slowest path idle first, alone with the original: 2/3", fell8, slowest, nil, 1.56e6, 1_023_791},
		{"fallen 8×, the slowest path idle first, the middle one beside it: its share of three", fell8, slowest, []Path{middle}, 1.56e6, 415_253},
		{"fallen 8×, the middle path, the slowest beside it", fell8, middle, []Path{slowest}, 1.56e6, 905_505},
		{"another path's queue drains after all would end: own's share of two", original, instant, []Path{queued(own, 5e6)}, 3e6, 1e6},
	} {
		if got := Trim(c.orig, c.own, c.others, c.left); got < c.want-1 || got > c.want+1 { // ±1: Balance rounds up
			t.Errorf("%s: Trim = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestUnload: an idle path takes from a slowed path's far end the pieces
// whose copies end both soonest, where it lands them ReinjectMargin
// sooner; whole pieces, however much of them the slowed path has sent.
func TestUnload(t *testing.T) {
	fell := path(10, 60) // a 50 Mbit/s path after a 5× drop: 1.25 MB/s
	own := path(100, 20) // 12.5 MB/s, idle
	busy := own
	busy.Queued = 3e6                             // 240 ms to drain
	two := []Owed{{400e3, 200e3}, {100e3, 100e3}} // alone: 240 ms at fell
	stopped := fell
	stopped.Rate = 0
	for _, c := range []struct {
		name      string
		slow, own Path
		owed      []Owed
		want      int
	}{
		{"half of a piece and one more left at 1.25 MB/s: own takes both", fell, own, two, 2},
		{"a large piece nearly sent: own takes the far one only", fell, own, []Owed{{2e6, 50e3}, {200e3, 200e3}}, 1},
		{"the slowed path delivers nothing now: own takes all", stopped, own, two, 2},
		{"a path at its rate with little left: nothing", path(50, 30), own, []Owed{{300e3, 100e3}}, 0},
		{"own's queue: it would land them later: nothing", fell, busy, two, 0},
		{"own lands it 52 ms sooner: it takes it", fell, own, []Owed{{100e3, 100e3}}, 1},
		{"own lands it 22 ms sooner, under ReinjectLead's 1.5×: it takes it, nothing comes after it", path(16, 60), own, []Owed{{100e3, 100e3}}, 1},
		{"own lands it 12 ms sooner, within ReinjectMargin: nothing", path(20, 60), own, []Owed{{100e3, 100e3}}, 0},
		{"own's rate a guess: nothing", fell, guess(own, 0), two, 0},
		{"nothing owed", fell, own, nil, 0},
	} {
		if got := Unload(c.slow, c.own, c.owed); got != c.want {
			t.Errorf("%s: Unload = %d, want %d", c.name, got, c.want)
		}
	}
}
