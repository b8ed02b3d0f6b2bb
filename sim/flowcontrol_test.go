package sim

import (
	"testing"
	"time"
)

// TestFCWindow walks quic-go's auto-tuning rule step by step.
func TestFCWindow(t *testing.T) {
	const rtt = 100 * time.Millisecond
	type step struct {
		read     int64
		at       time.Duration
		wantSize int64
		wantLim  int64
	}
	for _, tc := range []struct {
		name  string
		auto  bool
		steps []step
	}{
		{"fixed follows every read", false, []step{{10, 0, 100, 110}, {10, time.Second, 100, 120}}},
		{"no update before a quarter is consumed", true, []step{{20, 0, 100, 100}}},
		{"update without growth when slow", true, []step{{20, 0, 100, 100}, {10, 0, 100, 130}, {30, time.Second, 100, 160}}},
		// 60 of 100 read within 4·0.6·RTT = 240 ms of the epoch start: double.
		{"fast consumption doubles", true, []step{{1, 0, 100, 100}, {59, 200 * time.Millisecond, 200, 260}}},
		{"capped at max", true, []step{{1, 0, 100, 100}, {59, 10 * time.Millisecond, 200, 260}, {150, 20 * time.Millisecond, 250, 460}}},
	} {
		w := newFCWindow(100, 250, tc.auto)
		for i, st := range tc.steps {
			w.onRead(st.read, st.at, rtt)
			if w.size != st.wantSize || w.limit != st.wantLim {
				t.Errorf("%s: step %d: size %d limit %d, want %d %d", tc.name, i, w.size, w.limit, st.wantSize, st.wantLim)
			}
		}
	}
}

// TestAutoTune: on a path whose BDP (1.25 MB) exceeds quic-go's initial
// 512 KiB stream window, auto-tuning grows the windows and the transfer
// finishes well before one held at the initial window.
func TestAutoTune(t *testing.T) {
	run := func(cfg ConnConfig) time.Duration {
		s := New(1)
		c, err := NewConn(s, cfg, dumbbell(s, 1, 100, 50*time.Millisecond, 0, 2000)) // queue > BDP
		if err != nil {
			t.Fatal(err)
		}
		done := doneAt(c)
		if _, err := c.OpenStream(30_000_000, StreamOpts{}); err != nil {
			t.Fatal(err)
		}
		s.Run(5*time.Minute, 0, nil)
		if done[0] == 0 {
			t.Fatal("not delivered")
		}
		return done[0]
	}
	fixed := run(ConnConfig{StreamWindow: quicgoInitialStreamWindow, RecvWindow: quicgoInitialConnWindow})
	tuned := run(ConnConfig{AutoTune: true})
	t.Logf("fixed 512 KiB: %v, auto-tuned: %v", fixed, tuned)
	if float64(tuned) > 0.6*float64(fixed) {
		t.Errorf("auto-tuned %v, want well under the fixed window's %v", tuned, fixed)
	}
}
