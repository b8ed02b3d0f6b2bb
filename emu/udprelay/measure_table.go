package udprelay

import (
	"fmt"

	"github.com/hetquic/hetquic/internal/results"
)

// MeasureTable renders the measurements of one mode as the table that
// emu/RESULTS.md and BENCHMARKS.md show (hetquic emu measure --md), each row
// beside the goal its OK field judged, so a measured block is the command's
// own output and never a table kept by hand.
func MeasureTable(mode string, rs []MeasureResult) results.Table {
	t := results.Table{}
	met := func(r MeasureResult) string {
		if r.OK {
			return "yes"
		}
		return "**no**"
	}
	switch mode {
	case "delay":
		t.Caption = "**Delay**: one-way error (measured − configured), ms; goal p50 ≤ 0.5, p99 ≤ 2, never early."
		t.Header = []string{"configured ms", "packets/s", "p50", "p99", "max", "min", "received / sent", "goal met"}
		for _, r := range rs {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%g", r.Configured), fmt.Sprintf("%.0f", r.PacketsPS),
				ms(r.ErrP50Ms), ms(r.ErrP99Ms), ms(r.ErrMaxMs), ms(r.ErrMinMs), fmt.Sprintf("%d / %d", r.Received, r.Sent), met(r)})
		}
	case "rate":
		t.Caption = "**Rate**: delivered IP rate at 1.25× offered load; goal within ±3 %."
		t.Header = []string{"configured Mbit/s", "measured Mbit/s", "error", "goal met"}
		for _, r := range rs {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%g", r.Configured), fmt.Sprintf("%.3f", r.Measured),
				fmt.Sprintf("%+.3f %%", 100*r.RateErr), met(r)})
		}
	case "loss":
		t.Caption = "**Loss**: packets lost against the 99 % binomial interval of the configured probability."
		t.Header = []string{"probability", "sent", "lost", "99 % interval", "goal met"}
		for _, r := range rs {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%g", r.Configured), fmt.Sprint(r.Sent), fmt.Sprint(r.Sent - r.Received),
				fmt.Sprintf("%d–%d", r.LossLo, r.LossHi), met(r)})
		}
	case "forward":
		t.Caption = "**Forwarding**: packets/s with no impairment; goal ≥ 150 k per path and direction. The baseline is the same load generator and sink without the relay, in the same run: on a shared machine it, not the relay, often sets the rate."
		t.Header = []string{"run", "packets/s", "of the baseline", "CPU µs per packet", "goal met"}
		var base float64
		for _, r := range rs {
			name, ratio, goal := r.Mode+" "+r.Dir, "—", met(r)
			if r.Mode == "baseline" {
				base, name, goal = r.PacketsPS, "baseline (no relay)", "—"
			} else if base > 0 {
				ratio = fmt.Sprintf("%.2f", r.PacketsPS/base)
			}
			t.Rows = append(t.Rows, []string{name, fmt.Sprintf("%.0f", r.PacketsPS), ratio, fmt.Sprintf("%.2f", r.CPUPerPacketUs), goal})
		}
	}
	return t
}

func ms(v float64) string { return fmt.Sprintf("%.3f", v) }
