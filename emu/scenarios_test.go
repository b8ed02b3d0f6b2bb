package emu

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// The scenarios this package ships (scenarios/pcm-* belong to pcm).
var shipped = []string{"scenarios/cybertwin-2x2.5.yaml", "scenarios/leo.yaml", "scenarios/lte-wifi.yaml"}

func TestShippedScenarios(t *testing.T) {
	root := os.DirFS("..") // the repository root, as the CLI sees it
	for _, name := range shipped {
		t.Run(name, func(t *testing.T) {
			s, err := scenario.Load(root, name)
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(Config{Scenario: s, Sink: SinkFunc(func(int, Dir, []*Packet) {}), NoEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, ev := range s.Events { // every event applies cleanly
				if ev.Set != nil {
					if err := e.Apply(ev.Path, ev.Set); err != nil {
						t.Errorf("event at %v s: %v", ev.AtS, err)
					}
				}
			}
		})
	}
}

// TestShippedTracesRegenerate checks that the shipped traces are exactly what
// the documented gentrace commands produce.
func TestShippedTracesRegenerate(t *testing.T) {
	for _, tc := range []struct{ file, model string }{
		{"../scenarios/traces/lte-down-seed1.mahi", "lte"},
		{"../scenarios/traces/wifi-down-seed1.mahi", "wifi"},
	} {
		want, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := TraceModels[tc.model].Generate(1, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		WriteTrace(&got, ms)
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s differs from gentrace --model %s --seed 1 --duration-s 60", tc.file, tc.model)
		}
	}
}

func TestGenerateTrace(t *testing.T) {
	for _, name := range TraceModelNames() {
		m := TraceModels[name]
		a, err := m.Generate(7, 200*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := m.Generate(7, 200*time.Second)
		c, _ := m.Generate(8, 200*time.Second)
		if !equalU64(a, b) || equalU64(a, c) {
			t.Errorf("%s: not a deterministic function of the seed", name)
		}
		tr, err := scenario.ParseRateTrace(name, traceBytes(a))
		if err != nil {
			t.Fatal(err)
		}
		// Over 200 s the mean is near the chain's stationary mean (a
		// lazy symmetric birth-death chain is near uniform over its states,
		// pulled down a little by deep fades).
		var sum float64
		for _, s := range m.States {
			sum += s
		}
		uniform := sum / float64(len(m.States))
		if got := tr.MeanMbps(); got < 0.5*uniform || got > 1.3*uniform {
			t.Errorf("%s: mean %.2f Mbit/s, far from ~%.2f", name, got, uniform)
		}
		if tr.PeriodMs() != 200000 {
			t.Errorf("%s: period %d ms, want 200000", name, tr.PeriodMs())
		}
	}
	if _, err := TraceModels["lte"].Generate(1, time.Millisecond); err == nil {
		t.Error("a 1 ms trace was accepted")
	}
}

func traceBytes(ms []uint64) []byte {
	var b bytes.Buffer
	WriteTrace(&b, ms)
	return b.Bytes()
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
