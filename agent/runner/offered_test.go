package runner

import (
	"math"
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// TestOfferedRate: the denominator of goodput / sum follows the
// scenario's timed events from the transfer's start. The matrix's row
// whose first rate halves at 1 s offered 150 Mbit/s for its first second
// and 100 after it, not 150 throughout (the initial rates, downRate).
func TestOfferedRate(t *testing.T) {
	halves, err := matrixMixes[len(matrixMixes)-1].scenario()
	if err != nil {
		t.Fatal(err)
	}
	if len(halves.Events) != 1 {
		t.Fatalf("the matrix's last mix has %d events, want its rate that halves", len(halves.Events))
	}
	out, err := scenario.Parse(nil, "outage", []byte(`name: outage
paths:
  - {name: a, down: {rate_mbps: 40}}
  - {name: b, down: {rate_mbps: 10}}
events:
  - {at_s: 3, path: a, set: {down: {rate_mbps: 20}}}
  - {at_s: 1, path: a, outage_s: 2.5}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		sc    *scenario.Scenario
		paths []string
		d     time.Duration
		mbps  float64
	}{
		{"before the event", halves, nil, 500 * time.Millisecond, 150},
		{"over 2 s", halves, nil, 2 * time.Second, 125}, // (150 × 1 + 100 × 1) / 2
		{"over 1.28 s", halves, nil, 1280 * time.Millisecond, (150 + 100*0.28) / 1.28},
		{"the halving path alone", halves, []string{"p0"}, 2 * time.Second, 75},
		{"the other path alone", halves, []string{"p1"}, 2 * time.Second, 50},
		{"no time", halves, nil, 0, 150}, // downRate
		{"no events", out, []string{"b"}, 4 * time.Second, 10},
		// a: 40 for 1 s, dark 1–3.5 s (its rate set to 20 at 3 s), 20 for 0.5 s.
		{"an outage", out, []string{"a"}, 4 * time.Second, (40*1 + 20*0.5) / 4},
		{"event order", out, nil, 4 * time.Second, (40*1+20*0.5)/4 + 10},
	} {
		got := offeredRate(c.sc, c.paths, c.d) * 8 / 1e6
		if math.Abs(got-c.mbps) > 1e-9*c.mbps {
			t.Errorf("%s: offeredRate = %.6g Mbit/s, want %.6g", c.name, got, c.mbps)
		}
	}
}
