package runner

import "testing"

// fct_iqr_s is the spread of the finished flows' completion times (p75 −
// p25, type-7 quartiles), the box min-FCT's Fig. 7 compares; unfinished
// flows are left out of it as out of the quartiles.
func TestSummaryFCTSpread(t *testing.T) {
	r := &Result{
		Spec: &Spec{Variants: []Variant{{Label: "v"}}},
		Runs: []*RunResult{{Completed: true, Flows: []FlowResult{{FCTS: 1}, {FCTS: 2}, {FCTS: 3}, {FCTS: 5}, {FCTS: -1}}}},
	}
	s := r.Summaries()[0]
	// Quartiles of 1, 2, 3, 5: 1.75 and 3.5.
	if s.FCTP25S != 1.75 || s.FCTP75S != 3.5 || s.FCTIQRS != 1.75 || s.Unfinished != 1 {
		t.Errorf("p25 %v, p75 %v, iqr %v, unfinished %d; want 1.75, 3.5, 1.75, 1", s.FCTP25S, s.FCTP75S, s.FCTIQRS, s.Unfinished)
	}
}
