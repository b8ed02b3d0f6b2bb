package pathchoice

import (
	"testing"
	"time"
)

func TestSchedulers(t *testing.T) {
	ms := time.Millisecond
	paths := []PathView{
		{ID: 0, SRTT: 30 * ms, Outstanding: 5 << 20, Streams: 1, Weight: 1},
		{ID: 1, SRTT: 10 * ms, Outstanding: 10 << 20, Streams: 2, Weight: 4},
		{ID: 2, SRTT: 50 * ms, Outstanding: 0, Streams: 0, Weight: 0},
	}
	cases := []struct {
		name string
		req  Request
		want []int // successive picks
	}{
		{SchedMinRTT, Request{Priority: 1}, []int{1, 1}},
		{SchedRR, Request{Priority: 1}, []int{0, 1, 2, 0}},
		{SchedLOB, Request{Priority: 1}, []int{2, 2}},
		// priority: scores (weight+prio)*rtt: p0 (1+1)*30=60, p1 (4+1)*10=50, p2 (0+1)*50=50 → first of equal: p1.
		{SchedPriority, Request{Priority: 1}, []int{1}},
		// an important app: p0 (1+8)*30=270, p1 (4+8)*10=120, p2 8*50=400 → p1.
		{SchedPriority, Request{Priority: 8}, []int{1}},
	}
	for _, c := range cases {
		s, err := NewScheduler(c.name, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range c.want {
			if got := s.Pick(c.req, paths); got != want {
				t.Errorf("%s pick %d: got %d, want %d", c.name, i, got, want)
			}
		}
	}
	// minrtt: near-equal RTTs (within rttTie) go to the less busy path.
	near := []PathView{{ID: 0, SRTT: 10 * ms, Streams: 3}, {ID: 1, SRTT: 10*ms + 100*time.Microsecond, Streams: 0}}
	if got := (minRTT{}).Pick(Request{}, near); got != 1 {
		t.Errorf("minrtt near-equal: %d", got)
	}
	// learned: after teaching that path 1 serves bytes 10x faster, it is
	// chosen most of the time.
	l, _ := NewScheduler(SchedLearned, 2, 7)
	two := []PathView{{ID: 0, SRTT: 10 * ms}, {ID: 1, SRTT: 10 * ms}}
	hits := 0
	for i := range 300 {
		p := l.Pick(Request{}, two)
		d := 100 * ms
		if p == 1 {
			d = 10 * ms
		}
		l.Done(p, 100_000, d)
		if i >= 100 && p == 1 {
			hits++
		}
	}
	if hits < 180 {
		t.Errorf("learned picked the fast path %d of 200 times", hits)
	}
	// A learned choice that is not usable now falls back to the views.
	if got := l.Pick(Request{}, []PathView{{ID: 0}}); got != 0 {
		t.Errorf("fallback: %d", got)
	}
	if _, err := NewScheduler("nope", 2, 1); err == nil {
		t.Error("unknown scheduler accepted")
	}
}

// TestPriorityArrival pins priority's rule row by row: least (weight in
// progress + own priority) × when the path delivers firstBytes (its
// round trip and those bytes at its rate; arrival).
func TestPriorityArrival(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name  string
		prio  int
		paths []PathView
		want  int
	}{
		// 0.5 Mbit/s 30 ms away: 64 KiB in 1.08 s; 65 Mbit/s 130 ms away: 0.138 s.
		{"far fast path over near slow one", 1, []PathView{{ID: 0, SRTT: 30 * ms, Rate: 62.5e3}, {ID: 1, SRTT: 130 * ms, Rate: 8.1e6}}, 1},
		// 7 Mbit/s 25 ms away delivers a small object first (0.100 s against 0.128 s).
		{"near path that delivers first", 1, []PathView{{ID: 0, SRTT: 25 * ms, Rate: 0.875e6}, {ID: 1, SRTT: 120 * ms, Rate: 8.1e6}}, 0},
		{"equal rates: the shorter round trip", 1, []PathView{{ID: 0, SRTT: 130 * ms, Rate: 8e6}, {ID: 1, SRTT: 30 * ms, Rate: 8e6}}, 1},
		{"equal round trips: the higher rate", 1, []PathView{{ID: 0, SRTT: 20 * ms, Rate: 1e6}, {ID: 1, SRTT: 20 * ms, Rate: 10e6}}, 1},
		{"unmeasured: as fast as the best known", 1, []PathView{{ID: 0, SRTT: 20 * ms}, {ID: 1, SRTT: 30 * ms, Rate: 10e6}}, 0},
		{"no rate known: the round trip", 1, []PathView{{ID: 0, SRTT: 30 * ms}, {ID: 1, SRTT: 20 * ms}}, 1},
		{"weight in progress spreads apps", 1, []PathView{{ID: 0, SRTT: 20 * ms, Rate: 10e6, Weight: 3}, {ID: 1, SRTT: 20 * ms, Rate: 10e6}}, 1},
		// 9 × 0.027 s against 8 × 0.151 s: an important app keeps the fast path it shares.
		{"important app stays on the fast path", 8, []PathView{{ID: 0, SRTT: 20 * ms, Rate: 10e6, Weight: 1}, {ID: 1, SRTT: 20 * ms, Rate: 0.5e6}}, 0},
	}
	for _, c := range cases {
		if got := (priority{}).Pick(Request{Priority: c.prio}, c.paths); got != c.want {
			t.Errorf("%s: got path %d, want %d", c.name, got, c.want)
		}
	}
}
