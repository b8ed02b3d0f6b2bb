package stripesched

import (
	"testing"
	"time"
)

// TestDropped: a recent rate under DropBelow of the estimate is a drop
// where the path's queue, not the stripe, set it.
func TestDropped(t *testing.T) {
	const rate = 10e6
	for _, c := range []struct {
		name   string
		recent float64
		queued int64
		rtt    time.Duration
		want   bool
	}{
		{"4× lower, 1 MB owed", rate / 4, 1e6, ms(20), true},
		{"just under DropBelow", 0.69 * rate, 1e6, ms(20), true},
		{"a quarter lower: noise", 0.75 * rate, 1e6, ms(20), false},
		{"higher: the estimate follows a rise itself", 2 * rate, 1e6, ms(20), false},
		{"4× lower but owed under two round trips at it: app-limited", rate / 4, 90e3, ms(20), false},
		{"4× lower, owed just two round trips at it", rate / 4, 100e3, ms(20), true},
		{"nothing came", 0, 1e6, ms(20), false},
	} {
		if got := Dropped(rate, c.recent, c.queued, c.rtt); got != c.want {
			t.Errorf("%s: Dropped = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct{ rtt, want time.Duration }{{ms(10), DropSpan}, {ms(50), DropSpan}, {ms(80), ms(160)}} {
		if got := DropWindow(c.rtt); got != c.want {
			t.Errorf("DropWindow(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
}

// TestTrim: the original's path and own share what the original still
// owes so that both finish together; own takes the far part when that
// is MinPiece or more and ends the original ReinjectMargin sooner or
// more.
func TestTrim(t *testing.T) {
	queued := func(p Path, n int64) Path { p.Queued = n; return p }
	dropped := path(20, 10)  // the original's path after a 4× drop: 2.5 MB/s
	own := path(40, 30)      // 5 MB/s, 30 ms away, idle
	instant := path(40, 0)   // 5 MB/s, no round trip
	original := path(80, 10) // 10 MB/s
	for _, c := range []struct {
		name       string
		orig, own  Path
		left, want int64
	}{
		{"2 : 1, no round trip: a third", original, instant, 3e6, 1e6},
		{"own's round trip: it starts later", original, own, 3e6, 3e6 - 2_100_000},
		{"the original's path fell 4×: own takes most", dropped, own, 1.4e6, 1.4e6 - 516_667},
		{"the original's own queue and round trip do not count: its bytes flow", queued(dropped, 5e6), own, 1.4e6, 1.4e6 - 516_667},
		{"own's queue drains after the original ends: nothing", original, queued(own, 5e6), 3e6, 0},
		{"own's part under MinPiece: nothing", original, instant, 60e3, 0},
		{"the original delivers own's part within ReinjectMargin: nothing", path(800, 10), instant, 2e6, 0},
		{"own's rate a guess: nothing", original, guess(instant, 0), 3e6, 0},
		{"nothing owed", original, instant, 0, 0},
	} {
		if got := Trim(c.orig, c.own, c.left); got < c.want-1 || got > c.want+1 { // ±1: Balance rounds up
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
