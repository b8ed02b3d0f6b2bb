package pauseclock

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestLate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const every = 10 * time.Millisecond
	for _, c := range []struct {
		name string
		gap  time.Duration
		want time.Duration
	}{
		{"on time", every, 0},
		{"early", 4 * time.Millisecond, 0},
		{"late", 13 * time.Millisecond, 3 * time.Millisecond},
		{"descheduled", 440 * time.Millisecond, 430 * time.Millisecond},
	} {
		if got := Late(t0.Add(c.gap), t0, every); got != c.want {
			t.Errorf("%s: Late after %v = %v, want %v", c.name, c.gap, got, c.want)
		}
	}
}

// TestNewTicks checks that New's ticker ticks every period and stops.
func TestNewTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 10 * time.Millisecond
		tk := New(every)
		start := time.Now()
		<-tk.C()
		<-tk.C()
		if got := time.Since(start); got != 2*every {
			t.Errorf("two ticks took %v, want %v", got, 2*every)
		}
		tk.Reset(3 * every)
		at := time.Now()
		<-tk.C()
		if got := time.Since(at); got != 3*every {
			t.Errorf("a tick after Reset took %v, want %v", got, 3*every)
		}
		tk.Stop()
	})
}
