package sim

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// outageScenario's queues are 100 packets (about 0.1 s at 10 Mbit/s): with
// the default 1000 the reinjected data would wait behind seconds of queue on
// the surviving path, which is bufferbloat, not what TestOutageReinjection
// checks.
const outageScenario = `name: o
paths:
  - name: a
    up:   {delay_ms: 10, rate_mbps: 10, queue_packets: 100}
    down: {delay_ms: 10, rate_mbps: 10, queue_packets: 100}
  - name: b
    up:   {delay_ms: 30, rate_mbps: 10, queue_packets: 100}
    down: {delay_ms: 30, rate_mbps: 10, queue_packets: 100}
events:
  - {at_s: 1, path: a, outage_s: 4}
  - {at_s: 2, path: b, set: {down: {rate_mbps: 5}}}
`

func loadScenario(t *testing.T, text string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(fstest.MapFS{"s.yaml": {Data: []byte(text)}}, "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestHostNetEventsAndForecast: events change links at their times, and the
// MMQUIC forecast sees them coming.
func TestHostNetEventsAndForecast(t *testing.T) {
	s := New(1)
	h, err := NewHostNet(s, loadScenario(t, outageScenario))
	if err != nil {
		t.Fatal(err)
	}
	paths := h.Paths(true)
	if got := paths[1].Forecast(1500*time.Millisecond, time.Second); got != 5e6 {
		t.Errorf("forecast of b's down rate at 2.5 s: %v, want 5e6", got)
	}
	if got := paths[0].Forecast(0, 1500*time.Millisecond); got != 0 {
		t.Errorf("forecast of a during its outage: %v, want 0", got)
	}
	s.Run(1500*time.Millisecond, 0, nil)
	if !h.Down[0].Down() || !h.Up[0].Down() {
		t.Error("path a not in outage at 1.5 s")
	}
	s.Run(2500*time.Millisecond, 0, nil)
	if h.Down[1].Params().RateBps != 5e6 || h.Up[1].Params().RateBps != 10e6 {
		t.Errorf("b after its event: down %v up %v", h.Down[1].Params().RateBps, h.Up[1].Params().RateBps)
	}
	upAgain := false
	s.At(5*time.Second+time.Nanosecond, func() { upAgain = !h.Down[0].Down() && !h.Up[0].Down() })
	s.Run(6*time.Second, 0, nil)
	if !upAgain {
		t.Error("path a still down after its outage")
	}
}

// TestOutageReinjection: when the fast path dies mid-transfer, what it had
// in flight goes again on the other path (no multi-second head-of-line
// blocking), and the transfer completes for every scheduler.
func TestOutageReinjection(t *testing.T) {
	for _, sch := range []string{"minrtt", "rr", "mams", "late", "ecf", "blest", "redundant"} {
		s := New(1)
		h, err := NewHostNet(s, loadScenario(t, outageScenario))
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewConn(s, ConnConfig{Scheduler: sch}, h.Paths(true))
		if err != nil {
			t.Fatal(err)
		}
		var worst time.Duration
		done := false
		c.Receiver().OnDeliver = func(d Delivery) {
			worst = max(worst, d.Delay)
			if d.Chunk == c.Written()-1 {
				done = true
				s.Stop()
			}
		}
		c.Write(8 << 20)
		s.Run(time.Minute, 0, nil)
		if !done {
			t.Fatalf("%s: transfer did not complete", sch)
		}
		if worst > 1500*time.Millisecond {
			t.Errorf("%s: worst delivery delay %v across a 4 s outage, want < 1.5 s", sch, worst)
		}
	}
}

// TestHostNetTraces: trace files named in a scenario are read relative to it.
func TestHostNetTraces(t *testing.T) {
	fsys := fstest.MapFS{
		"s/s.yaml":    {Data: []byte("name: t\npaths:\n  - name: a\n    up: {delay_ms: 5}\n    down: {delay_ms: 5, rate_trace: tr/a.mahi, loss_trace: tr/a.loss}\n")},
		"s/tr/a.mahi": {Data: []byte("1\n2\n4\n")},
		"s/tr/a.loss": {Data: []byte("0 0 1\n")},
	}
	sc, err := scenario.Load(fsys, "s/s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHostNet(New(1), sc)
	if err != nil {
		t.Fatal(err)
	}
	p := h.Down[0].Params()
	if p.Trace == nil || len(p.Trace.Ms) != 3 || len(p.LossTrace) != 3 || !p.LossTrace[2] {
		t.Fatalf("traces not loaded: %+v", p)
	}
	if got := h.Paths(true)[0].Forecast(0, 0); got != 3*1500*8/0.004 {
		t.Errorf("forecast %v, want the trace's mean rate", got)
	}
}
