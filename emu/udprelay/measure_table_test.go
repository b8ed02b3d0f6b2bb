package udprelay

import (
	"strings"
	"testing"
)

// TestMeasureTable pins what emu measure --md prints: a row per
// measurement, the goal judged by the measurement's own OK, and forward's
// rate as a share of the baseline measured in the same run.
func TestMeasureTable(t *testing.T) {
	for _, c := range []struct {
		mode string
		rs   []MeasureResult
		want []string
	}{
		{"delay", []MeasureResult{{Configured: 20, PacketsPS: 10000, ErrP50Ms: 0.05, ErrP99Ms: 2.5, Sent: 10, Received: 10}},
			[]string{"| 20 | 10000 | 0.050 | 2.500 |", "| 10 / 10 | **no** |"}},
		{"rate", []MeasureResult{{Configured: 10, Measured: 9.9, RateErr: -0.01, OK: true}},
			[]string{"| 10 | 9.900 | -1.000 % | yes |"}},
		{"loss", []MeasureResult{{Configured: 0.01, Sent: 10000, Received: 9897, LossLo: 74, LossHi: 126, OK: true}},
			[]string{"| 0.01 | 10000 | 103 | 74–126 | yes |"}},
		{"forward", []MeasureResult{{Mode: "baseline", PacketsPS: 200000, OK: true}, {Mode: "forward", Dir: "up", PacketsPS: 160000, OK: true}},
			[]string{"| baseline (no relay) | 200000 | — |", "| forward up | 160000 | 0.80 |"}},
	} {
		got := MeasureTable(c.mode, c.rs).Markdown()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: table lacks %q:\n%s", c.mode, w, got)
			}
		}
	}
}
