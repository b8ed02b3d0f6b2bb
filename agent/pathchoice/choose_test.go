package pathchoice

import (
	"net/netip"
	"testing"
	"time"
)

// TestChoose is Choose's rules as a table: each row is the paths' observed
// state at one moment and the path that must be chosen. The scheduler is
// minrtt, so that among candidates the fastest one shows which were left.
func TestChoose(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	a1, a2, a3 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	// path builds path id on addr with RTT rtt, up and primary.
	path := func(id int, addr netip.Addr, rtt time.Duration) Path {
		return Path{View: PathView{ID: id, SRTT: rtt}, Addr: addr, Up: true, Primary: true}
	}
	down := func(p Path) Path { p.Up = false; return p }
	backup := func(p Path) Path { p.Primary = false; return p }
	suspect := func(p Path, until time.Time) Path { p.SuspectUntil = until; return p }
	cases := []struct {
		name  string
		req   Request
		paths []Path
		avoid map[int]bool
		want  int
	}{
		{"fastest up", Request{}, []Path{path(0, a1, 30*ms), path(1, a2, 10*ms)}, nil, 1},
		{"down left out", Request{}, []Path{path(0, a1, 30*ms), down(path(1, a2, 10*ms))}, nil, 0},
		{"none up", Request{}, []Path{down(path(0, a1, 30*ms)), down(path(1, a2, 10*ms))}, nil, -1},
		{"no paths", Request{}, nil, nil, -1},
		{"backup idle while a primary works", Request{}, []Path{path(0, a1, 30*ms), backup(path(1, a2, 10*ms))}, nil, 0},
		{"backup when the primary is down", Request{}, []Path{down(path(0, a1, 10*ms)), backup(path(1, a2, 30*ms))}, nil, 1},
		{"backup when the primary is suspected", Request{},
			[]Path{suspect(path(0, a1, 10*ms), now.Add(ms)), backup(path(1, a2, 30*ms))}, nil, 1},
		{"backup when the primary was tried", Request{},
			[]Path{path(0, a1, 10*ms), backup(path(1, a2, 30*ms))}, map[int]bool{0: true}, 1},
		{"suspicion over at now", Request{},
			[]Path{suspect(path(0, a1, 10*ms), now), path(1, a2, 30*ms)}, nil, 0},
		{"suspected left out", Request{},
			[]Path{suspect(path(0, a1, 10*ms), now.Add(ms)), path(1, a2, 30*ms)}, nil, 1},
		{"suspected when nothing else", Request{},
			[]Path{suspect(path(0, a1, 10*ms), now.Add(ms)), down(path(1, a2, 5*ms))}, nil, 0},
		{"every path suspected: the one whose suspicion ends first", Request{},
			[]Path{suspect(path(0, a1, 5*ms), now.Add(5*time.Second)), suspect(path(1, a2, 30*ms), now.Add(200*ms))}, nil, 1},
		{"every path tried: an unsuspected one before a suspected one", Request{},
			[]Path{suspect(path(0, a1, 5*ms), now.Add(5*time.Second)), path(1, a2, 30*ms)}, map[int]bool{0: true, 1: true}, 1},
		{"tried left out", Request{}, []Path{path(0, a1, 10*ms), path(1, a2, 30*ms)}, map[int]bool{0: true}, 1},
		{"tried when nothing else", Request{}, []Path{path(0, a1, 10*ms), down(path(1, a2, 5*ms))}, map[int]bool{0: true}, 0},
		{"sibling lane of a tried path left out", Request{},
			[]Path{path(0, a1, 50*ms), path(1, a1, 10*ms), path(2, a3, 30*ms)}, map[int]bool{0: true}, 2},
		{"sibling lane before a suspected path", Request{},
			[]Path{path(0, a1, 50*ms), path(1, a1, 30*ms), suspect(path(2, a3, 10*ms), now.Add(ms))}, map[int]bool{0: true}, 1},
		{"suspected before a tried path", Request{},
			[]Path{path(0, a1, 5*ms), suspect(path(1, a2, 30*ms), now.Add(ms))}, map[int]bool{0: true}, 1},
		{"pinned path taken", Request{Pin: 1}, []Path{path(0, a1, 30*ms), path(1, a2, 10*ms)}, nil, 0},
		{"pinned backup taken", Request{Pin: 2}, []Path{path(0, a1, 10*ms), backup(path(1, a2, 30*ms))}, nil, 1},
		{"pinned path suspected: chosen as usual", Request{Pin: 1},
			[]Path{suspect(path(0, a1, 5*ms), now.Add(ms)), path(1, a2, 30*ms)}, nil, 1},
		{"pinned path tried: chosen as usual", Request{Pin: 1},
			[]Path{path(0, a1, 5*ms), path(1, a2, 30*ms)}, map[int]bool{0: true}, 1},
		{"pin out of range ignored", Request{Pin: 9}, []Path{path(0, a1, 30*ms), path(1, a2, 10*ms)}, nil, 1},
	}
	for _, c := range cases {
		if got := Choose(c.req, c.paths, c.avoid, now, minRTT{}); got != c.want {
			t.Errorf("%s: chose %d, want %d", c.name, got, c.want)
		}
	}
}

// badPolicy returns a path it was not offered.
type badPolicy struct{}

func (badPolicy) Pick(Request, []PathView) int   { return 7 }
func (badPolicy) Done(int, int64, time.Duration) {}

// TestChooseBadPolicy: a scheduler's pick outside the candidates falls back
// to the first candidate rather than to a path that is down.
func TestChooseBadPolicy(t *testing.T) {
	paths := []Path{{View: PathView{ID: 0}, Up: false, Primary: true}, {View: PathView{ID: 1}, Up: true, Primary: true}}
	if got := Choose(Request{}, paths, nil, time.Time{}, badPolicy{}); got != 1 {
		t.Errorf("chose %d, want 1", got)
	}
}
