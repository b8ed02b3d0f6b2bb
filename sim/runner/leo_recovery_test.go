package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/hetquic/hetquic/sim/cc"
)

// fakeCC is a controller whose window and phase the test sets.
type fakeCC struct {
	cc.Controller
	w  int
	ss bool
}

func (f *fakeCC) Window() int       { return f.w }
func (f *fakeCC) InSlowStart() bool { return f.ss }

// TestRecoveryWatch drives the Fig. 3.11 recovery times through a crafted
// window trace against a path BDP of 100 kB: slow start reaching it after
// 50 ms; leaving slow start above it (0 ms); a cut, a second cut before
// the window got back (the first unrecovered), recovery after 150 ms; a
// restart in slow start that the run's end leaves unrecovered.
func TestRecoveryWatch(t *testing.T) {
	ms := time.Millisecond
	f := &fakeCC{}
	lr := &LEOResult{}
	w := &recoveryWatch{ctl: f, target: func(time.Duration) float64 { return 100e3 }, lr: lr}
	for _, s := range []struct {
		at time.Duration
		w  int
		ss bool
	}{
		{0, 15000, true}, {10 * ms, 30000, true}, {40 * ms, 90000, true},
		{50 * ms, 120000, true},  // SS reached the BDP: 50 ms
		{60 * ms, 130000, false}, // leaves SS above the BDP: CA 0 ms
		{100 * ms, 60000, false}, // cut: CA from 100 ms
		{200 * ms, 90000, false},
		{250 * ms, 45000, false}, // cut again: the first is unrecovered
		{300 * ms, 80000, false},
		{400 * ms, 100000, false}, // CA 150 ms
		{500 * ms, 6000, true},    // restart: SS from 500 ms
		{600 * ms, 48000, true},
	} {
		f.w, f.ss = s.w, s.ss
		w.sample(s.at)
	}
	w.end()
	if !slices.Equal(lr.RecoverySSMs, []float64{50}) || !slices.Equal(lr.RecoveryCAMs, []float64{0, 150}) {
		t.Errorf("SS %v, CA %v; want [50], [0 150]", lr.RecoverySSMs, lr.RecoveryCAMs)
	}
	if lr.SSUnrecovered != 1 || lr.CAUnrecovered != 1 {
		t.Errorf("unrecovered SS %d, CA %d; want 1, 1", lr.SSUnrecovered, lr.CAUnrecovered)
	}
	// A subflow that starts above its SST (MACO with B̄ below Ω) enters CA
	// at the start: 30 ms to the BDP.
	f.w, f.ss = 60000, false
	lr2 := &LEOResult{}
	w = &recoveryWatch{ctl: f, target: func(time.Duration) float64 { return 100e3 }, lr: lr2}
	w.sample(0)
	f.w = 100000
	w.sample(30 * ms)
	if !slices.Equal(lr2.RecoveryCAMs, []float64{30}) || len(lr2.RecoverySSMs) != 0 {
		t.Errorf("start in CA: SS %v, CA %v; want [], [30]", lr2.RecoverySSMs, lr2.RecoveryCAMs)
	}
}
