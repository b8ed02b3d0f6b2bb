package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/scenario"
)

// Every built-in agent experiment loads, and there is one per §V
// experiment.
func TestBuiltinSpecs(t *testing.T) {
	for _, n := range Names {
		s, err := Load(hetquic.Files, "experiments/agent-"+n+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if n == "matrix" { // its path mixes are built in (matrix.go)
			if s.Agent.Experiment != n {
				t.Fatalf("agent-%s: %+v", n, s.Agent)
			}
			for _, m := range matrixMixes {
				if _, err := m.scenario(); err != nil {
					t.Fatalf("mix %s: %v", m.name, err)
				}
			}
			continue
		}
		if s.Agent.Experiment != n || s.scenario == nil || len(s.scenario.Paths) != 2 {
			t.Fatalf("agent-%s: %+v", n, s.Agent)
		}
	}
}

func TestSpecErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"name: x\nmode: agent\nagent: {experiment: nope}\n", "agent.experiment"},
		{"name: x\nmode: sim\nagent: {experiment: loss}\n", "mode"},
		{"name: x\nmode: agent\nagent: {experiment: loss, repeat: 2}\n", "agent.repeat"},
		{"name: x\nmode: agent\nagent: {experiment: loss, losses_pct: [100]}\n", "agent.losses_pct[0]"},
		{"name: x\nmode: agent\nagent: {experiment: loss, scale: -1}\n", "agent.scale"},
		{"name: x\nmode: agent\nagent: {experiment: loss, bogus: 1}\n", "bogus"},
	} {
		_, err := Load(fstest.MapFS{"x.yaml": {Data: []byte(c.yaml)}}, "x.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line naming %s", c.yaml, err, c.want)
		}
	}
}

// The spec runs through the worker pool and writes summary.json, the chart and
// report.md; the report's table has a row per mode.
func TestRunPrefetchSpec(t *testing.T) {
	s, err := Load(hetquic.Files, "experiments/agent-prefetch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s.Agent.Scale = 0.02
	r, err := Run(context.Background(), s, workpool.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := r.WriteAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 { // summary.json, prefetch.png, prefetch.svg, report.md
		t.Fatalf("files %v", files)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if !strings.Contains(string(sum), `"mode": "agent"`) || !strings.Contains(string(sum), `"schema_version": 1`) {
		t.Fatalf("summary.json: %s", sum)
	}
	if tb := r.Tables()[0]; len(tb.Rows) != 2 {
		t.Fatalf("rows %v", tb.Rows)
	}
}

// TestOptionsByExperiment: an option is refused, by the registry's one
// rule, for an experiment that does not take it, with the experiments that
// do named; the defaults come from the registry.
func TestOptionsByExperiment(t *testing.T) {
	cases := []struct {
		exp  string
		set  func(*Params)
		want string // "": accepted
	}{
		{"loss", func(p *Params) { p.MPTCP = true }, "agent.mptcp: only for aggregate, stripe and matrix"},
		{"matrix", func(p *Params) { p.MPTCP = true }, ""},
		{"matrix", func(p *Params) { p.MPTCP, p.MPTCPCC = true, "cubic" }, ""},
		{"stripe", func(p *Params) { p.MPTCPCC = "cubic" }, "agent.mptcp_cc: only with agent.mptcp"},
		{"matrix", func(p *Params) { p.MPTCP, p.MPTCPCC = true, "Cubic;" }, `agent.mptcp_cc: "Cubic;" is not a congestion control name`},
		{"matrix", func(p *Params) { p.MPTCP, p.MPTCPCC = true, "a_name_too_long_" }, "is not a congestion control name"},
		{"loss", func(p *Params) { p.Repeat = 2 }, "agent.repeat: only aggregate repeats"},
		{"aggregate", func(p *Params) { p.Repeat = 2 }, ""},
		{"aggregate", func(p *Params) { p.TCP = true }, "agent.tcp: only for handshake and loss"},
		{"handshake", func(p *Params) { p.TCP = true }, ""},
		{"loss", func(p *Params) { p.TCP, p.TCPCC = true, "cubic" }, ""},
		{"loss", func(p *Params) { p.TCPCC = "cubic" }, "agent.tcp_cc: only for loss with agent.tcp"},
		{"handshake", func(p *Params) { p.TCP, p.TCPCC = true, "cubic" }, "agent.tcp_cc: only for loss with agent.tcp"},
		{"loss", func(p *Params) { p.TCP, p.TCPCC = true, "Cubic;" }, `agent.tcp_cc: "Cubic;" is not a congestion control name`},
		{"nope", func(*Params) {}, `agent.experiment: "nope" is not one of`},
	}
	for _, c := range cases {
		s := &Spec{Agent: Params{Experiment: c.exp}}
		s.Name, s.Mode = "t", "agent"
		c.set(&s.Agent)
		err := s.Prepare()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.exp, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.exp, err, c.want)
		}
	}
	s := &Spec{Agent: Params{Experiment: "loss"}}
	s.Name, s.Mode = "t", "agent"
	if err := s.Prepare(); err != nil || s.Agent.Scale != 0.1 {
		t.Errorf("loss's default scale: %g (%v)", s.Agent.Scale, err)
	}
}

// TestSetScenarioNeedsRates: an experiment that compares goodput with the
// paths' summed down rate (stripe, aggregate) refuses a scenario with a
// path left unlimited, naming the path; one that does not (handshake)
// takes it. Accepting every scenario (stripe then reported goodput / sum
// as +Inf) fails the first rows, refusing every unlimited path the last.
func TestSetScenarioNeedsRates(t *testing.T) {
	unlimited, err := scenario.Parse(nil, "u.yaml", []byte("name: u\npaths:\n"+
		"  - {name: a, up: {delay_ms: 5}, down: {delay_ms: 5, rate_mbps: 10, queue_bytes: 12500}}\n"+
		"  - {name: b, up: {delay_ms: 5}, down: {delay_ms: 5, queue_bytes: 12500}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rated, err := scenario.Parse(nil, "r.yaml", []byte("name: r\npaths:\n"+
		"  - {name: a, up: {delay_ms: 5}, down: {delay_ms: 5, rate_mbps: 10, queue_bytes: 12500}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		exp  string
		sc   *scenario.Scenario
		want string // "": accepted
	}{
		{"stripe", unlimited, "scenario u: paths[1] (b).down.rate_mbps: missing; stripe compares goodput"},
		{"aggregate", unlimited, "paths[1] (b).down.rate_mbps: missing; aggregate"},
		{"stripe", rated, ""},
		{"handshake", unlimited, ""},
	} {
		s := &Spec{Agent: Params{Experiment: c.exp}}
		s.Name, s.Mode = "t", "agent"
		if err := s.Prepare(); err != nil {
			t.Fatal(err)
		}
		err := s.SetScenario(c.sc)
		switch {
		case c.want == "" && (err != nil || s.scenario != c.sc):
			t.Errorf("%s on %s: %v, want it taken", c.exp, c.sc.Name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s on %s: %v, want %q", c.exp, c.sc.Name, err, c.want)
		}
	}
}
