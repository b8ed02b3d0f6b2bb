package studies

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestMathis checks single-path NewReno against the Mathis formula (mean
// RTT) within 15 % from 0.1 % to 2 % loss and against Padhye's model, which
// adds timeouts, within 15 % at every loss rate; and that ACKing every
// second packet, which the formulas do not model, never raises the goodput
// (the odd packet of a small window waits max_ack_delay). sim/DESIGN.md
// prints the table (hetquic sim mathis --md).
func TestMathis(t *testing.T) {
	dur := MathisDuration
	if testing.Short() {
		dur = 60 * time.Second
	}
	rows, err := Mathis(context.Background(), dur)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteMathisTable(&b, rows, dur); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if len(rows) != len(MathisLosses) {
		t.Fatalf("%d rows, want %d", len(rows), len(MathisLosses))
	}
	for _, r := range rows {
		if ratio := r.Measured / r.MathisMean; r.Loss <= 0.02 && math.Abs(ratio-1) > 0.15 {
			t.Errorf("loss %v: measured/Mathis = %.3f, want within 15 %%", r.Loss, ratio)
		}
		if ratio := r.Measured / r.Padhye; math.Abs(ratio-1) > 0.15 {
			t.Errorf("loss %v: measured/Padhye = %.3f, want within 15 %%", r.Loss, ratio)
		}
		if r.MeasuredAck2 > r.Measured {
			t.Errorf("loss %v: %.3f Mbit/s ACKing every second packet, more than %.3f ACKing every packet", r.Loss, r.MeasuredAck2, r.Measured)
		}
	}
}
