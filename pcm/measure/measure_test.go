package measure

import (
	"context"
	"testing"
)

// A small switch-cost cell runs through the bench: both medians are real
// request times, at least the path's round trip.
func TestSwitchCostCell(t *testing.T) {
	cells, err := MeasureSwitchCost(context.Background(), []float64{20}, []int{5120}, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	c := cells[0]
	if c.StayMs < 20 || c.SwitchMs < 20 || c.CostMs != c.SwitchMs-c.StayMs {
		t.Fatalf("%+v: a request over a 20 ms path took less than its round trip", c)
	}
}

// A failover trial cuts the active path and the body still arrives whole.
func TestFailoverTrial(t *testing.T) {
	fs, err := MeasureFailover(context.Background(), 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || !fs[0].Intact || fs[0].ResumeMs <= 0 {
		t.Fatalf("%+v", fs)
	}
}
