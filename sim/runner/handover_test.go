package runner

import (
	"testing"

	"github.com/hetquic/hetquic/scenario"
)

// TestHandoversBefore: only outages (a drive's handovers) that begin
// before the transfer's last delivery count; rate changes do not.
func TestHandoversBefore(t *testing.T) {
	evs := []scenario.Event{
		{AtS: 2, OutageS: 0.5},
		{AtS: 3, Set: &scenario.Patch{}},
		{AtS: 9, OutageS: 0.05},
		{AtS: 30, OutageS: 0.5},
	}
	for _, tc := range []struct {
		last float64
		want int
	}{{1, 0}, {2.5, 1}, {10, 2}, {60, 3}} {
		if got := handoversBefore(evs, tc.last); got != tc.want {
			t.Errorf("last delivery at %g s: %d handovers, want %d", tc.last, got, tc.want)
		}
	}
}
