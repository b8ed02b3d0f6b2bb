package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// The path-mix matrix: the stripe experiment (ct striped, ct on the best
// path alone, kernel MPTCP over the same paths) on each mix of
// matrixMixes, one row per mix. Each mix is a scenario: down rate and RTT
// per path, queues of about 50 ms at the path's rate, loss where the mix
// says, and timed events (a rate that halves) started with the measured
// transfer.
type matrixMix struct {
	name   string
	paths  []mixPath
	events string // YAML events block, "" for none
}

type mixPath struct {
	mbps, rttMs, loss float64
}

var matrixMixes = []matrixMix{
	{"equal", []mixPath{{50, 20, 0}, {50, 20, 0}}, ""},
	{"2 : 1", []mixPath{{80, 20, 0}, {40, 30, 0}}, ""},
	{"4 : 2 : 1", []mixPath{{80, 10, 0}, {40, 30, 0}, {20, 60, 0}}, ""},
	{"10 : 1", []mixPath{{150, 20, 0}, {15, 50, 0}}, ""},
	{"10 : 1, 2.5× the RTT", []mixPath{{150, 20, 0}, {15, 125, 0}}, ""},
	{"2 : 1, 1 % loss on the second", []mixPath{{80, 20, 0}, {40, 30, 0.01}}, ""},
	{"2 : 1, the first's rate halves at 1 s", []mixPath{{100, 20, 0}, {50, 30, 0}},
		"events:\n  - {at_s: 1, path: p0, set: {down: {rate_mbps: 50}}}\n"},
}

// mixQueue is each path's queue in time at its rate: a router buffer of
// about one large RTT, as the emulator's scenarios use.
const mixQueue = 50 * time.Millisecond

// scenario builds the mix's scenario (paths p0, p1, …).
func (m matrixMix) scenario() (*scenario.Scenario, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "name: mix\ndescription: %q\npaths:\n", m.name)
	for i, p := range m.paths {
		half := p.rttMs / 2
		queue := int(p.mbps * 1e6 / 8 * mixQueue.Seconds())
		fmt.Fprintf(&b, "  - name: p%d\n    up: {delay_ms: %g}\n    down: {delay_ms: %g, rate_mbps: %g, queue_bytes: %d, loss: %g}\n",
			i, half, half, p.mbps, queue, p.loss)
	}
	b.WriteString(m.events)
	return scenario.Parse(nil, "mix-"+m.name, []byte(b.String()))
}

// describe is the mix's paths as "150/20 + 15/50 (Mbit/s / ms RTT)".
func (m matrixMix) describe() string {
	var parts []string
	for _, p := range m.paths {
		s := fmt.Sprintf("%g/%g", p.mbps, p.rttMs)
		if p.loss > 0 {
			s += fmt.Sprintf(" %g %% loss", 100*p.loss)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " + ")
}

// MatrixConfig is the matrix run: one object of Size bytes per mode and mix.
type MatrixConfig struct {
	Size    int64
	MPTCP   bool
	MPTCPCC string // kernel MPTCP's congestion control ("": the host's default)
	Lanes   int    // ct's QUIC connections per path (0: 1; agent.Lanes)
	// FixedLanes: ct-client adds no lanes to a lossy path
	// (ClientConfig.FixedLanes).
	FixedLanes bool
	// SenderTrace: each mix's striped transfer is traced
	// (StripeConfig.SenderTrace), its notes named by the mix.
	SenderTrace bool
	Seed        uint64
	Log         *slog.Logger
}

// MatrixRow is one mix: goodput striped, on the best path alone and with
// kernel MPTCP (0: not run), in Mbit/s, and the summed down rate over the
// striped transfer (StripeRow.SumMbps); and the
// CPU cost of the striped and the MPTCP transfer in CPU seconds per GB
// (cpucost.go: process and whole machine; 0: not measured). CPURatio is
// ct's machine-wide cost over MPTCP's, the one comparison that counts
// both the same way.
type MatrixRow struct {
	Mix     string  `json:"mix"`
	Paths   string  `json:"paths"`
	SumMbps float64 `json:"sum_mbps"`
	Striped float64 `json:"striped_mbps"`
	Best    float64 `json:"best_alone_mbps"`
	MPTCP   float64 `json:"mptcp_mbps"`
	Shares  string  `json:"shares"`

	CtProcCPU    float64 `json:"ct_process_cpu_s_per_gb"`
	CtCPU        float64 `json:"ct_machine_cpu_s_per_gb"`
	MPTCPProcCPU float64 `json:"mptcp_process_cpu_s_per_gb"`
	MPTCPCPU     float64 `json:"mptcp_machine_cpu_s_per_gb"`
	CPURatio     float64 `json:"ct_over_mptcp_machine_cpu"`
	// MPTCPCC is kernel MPTCP's congestion control: under random loss a
	// loss-based one (cubic, reno; quic-go's NewReno is one) and bbr
	// differ by several times (agent/DESIGN.md, "Striping").
	MPTCPCC string `json:"mptcp_congestion_control,omitempty"`
}

// RunMatrix runs the stripe experiment on every mix.
func RunMatrix(ctx context.Context, cfg MatrixConfig) ([]MatrixRow, []string, error) {
	var rows []MatrixRow
	var notes []string
	seen := false // the mixes' other notes (MPTCP's) are alike: the first mix's stand for all
	for _, m := range matrixMixes {
		row, n, err := runMix(ctx, m, cfg)
		if err != nil {
			return rows, notes, fmt.Errorf("mix %s: %w", m.name, err)
		}
		var traced, other []string
		for _, line := range n {
			if strings.HasPrefix(line, senderTraceNote) {
				traced = append(traced, m.name+": "+line)
			} else {
				other = append(other, line)
			}
		}
		if len(other) > 0 && !seen {
			notes, seen = append(notes, other...), true
		}
		notes = append(notes, traced...)
		rows = append(rows, row)
	}
	return rows, notes, nil
}

// runMix runs the stripe experiment on one mix.
func runMix(ctx context.Context, m matrixMix, cfg MatrixConfig) (MatrixRow, []string, error) {
	sc, err := m.scenario()
	if err != nil {
		return MatrixRow{}, nil, err
	}
	got, notes, err := RunStripe(ctx, StripeConfig{Scenario: sc, Size: cfg.Size, MPTCP: cfg.MPTCP, MPTCPCC: cfg.MPTCPCC, Lanes: cfg.Lanes, FixedLanes: cfg.FixedLanes,
		SenderTrace: cfg.SenderTrace, Seed: cfg.Seed, Log: cfg.Log})
	if err != nil {
		return MatrixRow{}, notes, err
	}
	row := MatrixRow{Mix: m.name, Paths: m.describe(), SumMbps: got[0].SumMbps, Striped: got[0].Mbps, Best: got[1].Mbps, Shares: got[0].Shares,
		CtProcCPU: got[0].CPUsPerGB, CtCPU: got[0].MachineCPUsPerGB}
	if len(got) > 2 {
		row.MPTCP, row.MPTCPProcCPU, row.MPTCPCPU, row.MPTCPCC = got[2].Mbps, got[2].CPUsPerGB, got[2].MachineCPUsPerGB, got[2].CC
		row.CPURatio = costRatio(row.CtCPU, row.MPTCPCPU)
	}
	return row, notes, nil
}
