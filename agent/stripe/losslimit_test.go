package stripe

import (
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// TestLossLimit: a slower path's rate and peak are capped at its
// loss-limited rate; the swiftest path's never are (its slow start's
// burst would read as loss), nor a path without a limit.
func TestLossLimit(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	all := map[int]stripesched.Path{
		0: {RTT: ms(47), Rate: 19e6, Peak: 19e6},
		1: {RTT: ms(17), Rate: 2.4e6, Peak: 2.5e6},
		2: {RTT: ms(30), Rate: 1e6, Peak: 1e6},
	}
	lossLimit(all, map[int]float64{0: 0.5e6, 1: 0.8e6})
	for id, want := range map[int]stripesched.Path{
		0: {RTT: ms(47), Rate: 19e6, Peak: 19e6},
		1: {RTT: ms(17), Rate: 0.8e6, Peak: 0.8e6},
		2: {RTT: ms(30), Rate: 1e6, Peak: 1e6},
	} {
		if all[id] != want {
			t.Errorf("path %d: %+v, want %+v", id, all[id], want)
		}
	}
}
