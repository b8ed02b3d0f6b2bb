package capacity

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestWithDefaults: zero fields take Default's, given ones stay.
func TestWithDefaults(t *testing.T) {
	c := Config{Devices: []int{5}, Interval: time.Second}.withDefaults()
	if len(c.Devices) != 1 || c.Devices[0] != 5 || c.Interval != time.Second || c.Idle != Default.Idle || c.Wave != defaultWave || c.Bytes != Default.Bytes {
		t.Fatalf("%+v", c)
	}
	if c := (Config{}).withDefaults(); len(c.Devices) != 2 || c.Interval != defaultInterval || c.Seed != 1 {
		t.Fatalf("zero: %+v", c)
	}
}

// TestGapsSeeded: the same seed and device draw the same gaps, another
// device others, and their mean is near the interval.
func TestGapsSeeded(t *testing.T) {
	a, b, other := newGaps(1, 3, time.Second), newGaps(1, 3, time.Second), newGaps(1, 4, time.Second)
	var sum time.Duration
	same := 0
	const n = 4000
	for range n {
		x, y, z := a(), b(), other()
		if x != y {
			t.Fatal("same seed and device, different gaps")
		}
		if x == z {
			same++
		}
		sum += x
	}
	if same > n/100 {
		t.Fatalf("devices 3 and 4 drew %d equal gaps of %d", same, n)
	}
	if mean := sum / n; mean < 900*time.Millisecond || mean > 1100*time.Millisecond {
		t.Fatalf("mean gap %v, want about 1 s", mean)
	}
}

// TestQuantile: type-7 quantiles; none for an empty sample.
func TestQuantile(t *testing.T) {
	ds := []time.Duration{4 * time.Millisecond, 1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 100 * time.Millisecond}
	if got := quantile(ds, 0.5); got != 3*time.Millisecond {
		t.Fatalf("p50 %v", got)
	}
	if got := quantile(ds, 1); got != 100*time.Millisecond {
		t.Fatalf("p100 %v", got)
	}
	if got := quantile(nil, 0.99); got != 0 {
		t.Fatalf("empty: %v", got)
	}
}

// TestMarkdown: the table's row, per-device and per-request figures, and
// the verdict against the goals for the 1000-device row.
func TestMarkdown(t *testing.T) {
	row := Row{Devices: 1000, BaseRSS: 20 << 20, IdleRSS: 220 << 20, PeakRSS: 300 << 20, Handshakes: 2000, HandshakeTime: 10 * time.Second,
		IdleCPU: 600 * time.Millisecond, ActiveCPU: 2 * time.Second, LabCPU: 3 * time.Second, PathsUp: 2000, Requests: 1000,
		P50: 2 * time.Millisecond, P99: 40 * time.Millisecond}
	r := &Report{Config: Default.withDefaults(), Rows: []Row{row}}
	var b bytes.Buffer
	r.Markdown(&b)
	s := b.String()
	for _, want := range []string{
		"| 1000 | 220 MiB (20 MiB) | 204 KiB | 200 | 5.0 % | 2000 of 2000 | 1000 (0) | 2.0 / 40.0 ms | 300 MiB | 2.00 / 3.00 ms |",
		"keep-alive every 5s", "Met.",
		"1000 devices: at 5.00 ms of CPU per request (ct-server and lab), two cores carry at most 400 requests a second through this lab, 100 offered (500 per core through ct-server alone).",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	r.Rows[0].P99, r.Rows[0].IdleRSS, r.Rows[0].Failed = 60*time.Millisecond, 600<<20, 2
	b.Reset()
	r.Markdown(&b)
	if s := b.String(); !strings.Contains(s, "**Not met: idle RSS 600 MiB; p99 60.0 ms; 2 failed requests, 2000 of 2000 paths up.**") {
		t.Errorf("verdict:\n%s", s)
	}
	r.Rows[0].Devices = 100
	b.Reset()
	r.Markdown(&b)
	if s := b.String(); !strings.Contains(s, "No row of 1000 devices") {
		t.Errorf("verdict without a 1000 row:\n%s", s)
	}
}
