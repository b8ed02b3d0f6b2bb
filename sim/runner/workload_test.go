package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runVariants runs the named variants of a shipped experiment, one seed.
func runVariants(t *testing.T, file string, labels ...string) map[string]Summary {
	t.Helper()
	s, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var keep []Variant
	for _, l := range labels {
		for _, v := range s.Variants {
			if v.Label == l {
				keep = append(keep, v)
			}
		}
	}
	if len(keep) != len(labels) {
		t.Fatalf("%s: variants %v not all found", file, labels)
	}
	s.Variants, s.Seeds = keep, 1
	res, err := Run(context.Background(), s, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Summary{}
	for _, x := range res.Summaries() {
		out[x.Label] = x
	}
	return out
}

// TestHoLWindowSchedulersMatter is the acceptance check on the
// shipped sim-hol-window experiment: with a 256 kB receive window over
// Wi-Fi + 3G, minRTT's head-of-line blocking makes the download at least
// 20 % slower than BLEST's, and BLEST is no slower than the fast path
// alone (the direction BLEST's paper reports); with a 1 MB window the
// schedulers are within 10 % of each other.
func TestHoLWindowSchedulersMatter(t *testing.T) {
	r := runVariants(t, "../experiments/sim-hol-window.yaml", "minRTT 256k", "BLEST 256k", "Wi-Fi only 256k", "minRTT 1M", "BLEST 1M")
	m, b, w := r["minRTT 256k"].FCTP50S, r["BLEST 256k"].FCTP50S, r["Wi-Fi only 256k"].FCTP50S
	t.Logf("256 kB: minRTT %.2f s, BLEST %.2f s, Wi-Fi only %.2f s; 1 MB: minRTT %.2f s, BLEST %.2f s", m, b, w, r["minRTT 1M"].FCTP50S, r["BLEST 1M"].FCTP50S)
	if !(m >= 1.2*b) {
		t.Errorf("minRTT %.2f s is not ≥ 1.2× BLEST's %.2f s", m, b)
	}
	if !(b <= 1.02*w) {
		t.Errorf("BLEST %.2f s is slower than the fast path alone (%.2f s)", b, w)
	}
	if m1, b1 := r["minRTT 1M"].FCTP50S, r["BLEST 1M"].FCTP50S; m1 > 1.1*b1 || b1 > 1.1*m1 {
		t.Errorf("1 MB window: minRTT %.2f s and BLEST %.2f s differ by more than 10 %%", m1, b1)
	}
}

// TestStreamWorkloads runs each stream workload on a small two-path
// scenario: every flow completes, the stream metrics are filled, and the
// results do not depend on the number of workers.
func TestStreamWorkloads(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "two.yaml", twoPaths)
	for _, app := range []string{
		"{kind: streams, streams: 4, size_mb: 0.2}",
		"{kind: video, fps: 25, bitrate_mbps: 4, frames: 50, gop: 10, i_scale: 4, deadline_ms: 100, background_mb: 1}",
		"{kind: cbr, rate_mbps: 2, cbr_s: 2}",
		"{kind: reqresp, requests: 5, resp_kb: 100, think_ms: 200}",
	} {
		f := write(t, dir, "w.yaml", "name: w\nscenario: two.yaml\nseeds: 2\napp: "+app+"\nvariants: [{scheduler: minrtt}, {scheduler: rr}]\n")
		s, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", app, err)
		}
		r1, err := Run(context.Background(), s, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		r3, err := Run(context.Background(), s, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, run := range r1.Runs {
			if !run.Completed || len(run.StreamMs) == 0 || len(run.AppDelayMs) == 0 && s.App.Kind != "streams" {
				t.Errorf("%s: run %d completed %v, %d stream samples, %d app delays", app, i, run.Completed, len(run.StreamMs), len(run.AppDelayMs))
			}
			if r3.Runs[i].EndS != run.EndS || len(r3.Runs[i].StreamMs) != len(run.StreamMs) || r3.Runs[i].Missed != run.Missed {
				t.Errorf("%s: run %d differs between 1 and 3 workers", app, i)
			}
		}
		sum := r1.Summaries()[0]
		if sum.StreamP50Ms <= 0 || (s.App.Kind == "video" && sum.Deadlines != 2*50) {
			t.Errorf("%s: summary %+v", app, sum)
		}
	}
}

// FuzzLoad: no experiment file makes Load panic; errors are one line.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../experiments/*.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\nscenario: two.yaml\napp: {kind: video, fps: 30, bitrate_mbps: 2, frames: 3, deadline_ms: 50}\nvariants: [{}]\n"))
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "two.yaml"), []byte(twoPaths), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error: %v", err)
		}
	})
}
