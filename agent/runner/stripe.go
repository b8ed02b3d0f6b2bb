package runner

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// StripeConfig is the unequal-paths experiment: one object of Size bytes
// striped over every path of the scenario, against the first path alone
// and (MPTCP) kernel MPTCP over the same paths in the root lab.
type StripeConfig struct {
	Scenario *scenario.Scenario
	Size     int64
	MPTCP    bool
	MPTCPCC  string // kernel MPTCP's congestion control ("": the host's default)
	Lanes    int    // ct's QUIC connections per path (0: 1; agent.Lanes)
	// FixedLanes: ct-client adds no lanes to a lossy path
	// (ClientConfig.FixedLanes).
	FixedLanes bool
	// SenderTrace: trace ct-server's QUIC senders and the relay's queues
	// over the striped transfer and add, per path, what kept its link idle
	// to the notes (sendertrace.go).
	SenderTrace bool
	Seed        uint64
	Log         *slog.Logger
}

// StripeRow is one mode of the stripe experiment.
type StripeRow struct {
	Mode string  `json:"mode"`
	Ms   float64 `json:"ms"`
	Mbps float64 `json:"goodput_mbps"`
	// SumMbps is the summed down rate of the paths the mode may use (all
	// of them for striping and MPTCP), averaged over the mode's transfer
	// where the scenario's events change a rate (offeredRate); Ratio =
	// Mbps / SumMbps.
	SumMbps float64 `json:"sum_mbps"`
	Ratio   float64 `json:"ratio"`
	// Shares is each path's part of the bytes ct-client received ("" for
	// MPTCP, whose subflows the lab does not count per path).
	Shares string `json:"shares"`
	// CPUsPerGB and MachineCPUsPerGB are the transfer's CPU cost in CPU
	// seconds per GB, this process's and the whole machine's (cpucost.go
	// says what each counts); 0: not measured.
	CPUsPerGB        float64 `json:"cpu_s_per_gb"`
	MachineCPUsPerGB float64 `json:"machine_cpu_s_per_gb"`
	// CC is kernel MPTCP's congestion control ("" for ct's rows: quic-go
	// v0.65 always runs NewReno).
	CC string `json:"congestion_control,omitempty"`
}

// RunStripe runs the stripe experiment; a missing MPTCP baseline is a
// note, not an error.
func RunStripe(ctx context.Context, cfg StripeConfig) (rows []StripeRow, notes []string, err error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return nil, nil, err
	}
	// Striped, and the first (fastest) path alone: the slow path alone
	// would take minutes and says nothing about striping.
	modes := [][]string{nil, {sc.Paths[0].Name}}
	for _, paths := range modes {
		row, traced, err := stripeOnce(ctx, sc, cfg, paths)
		if err != nil {
			return rows, notes, err
		}
		rows, notes = append(rows, row), append(notes, traced...)
	}
	if !cfg.MPTCP {
		return rows, notes, nil
	}
	run, err := mptcpFetch(ctx, sc, cfg.Seed, cfg.MPTCPCC, []int64{cfg.Size}, true)
	switch {
	case errors.Is(err, ErrNoMPTCP):
		return rows, append(notes, fmt.Sprintf("no MPTCP row: %v", err)), nil
	case err != nil:
		return rows, notes, err
	}
	sum := offeredRate(sc, nil, run.span) * 8 / 1e6
	mbps := float64(cfg.Size) * 8 / 1e6 / run.span.Seconds()
	if run.cc != "" {
		notes = append(notes, "kernel MPTCP's congestion control: "+ccOrigin(run.cc, cfg.MPTCPCC))
	}
	return append(rows, StripeRow{Mode: "kernel MPTCP (lab)", Ms: stats.Ms(run.span), Mbps: mbps, SumMbps: sum, Ratio: mbps / sum,
		CPUsPerGB: perGB(run.cpu.proc, cfg.Size), MachineCPUsPerGB: perGB(run.cpu.machine, cfg.Size), CC: run.cc}), notes, nil
}

// stripeOnce downloads the object through a fresh ct-client over paths
// (nil: all, striped) and counts what each path carried; notes: the
// sender trace's lines (cfg.SenderTrace, striped only).
func stripeOnce(ctx context.Context, sc *scenario.Scenario, cfg StripeConfig, paths []string) (_ StripeRow, notes []string, _ error) {
	mode := "ct striped over all paths"
	if paths != nil {
		mode = "ct on " + paths[0] + " alone"
	}
	ecfg := envConfig{Scenario: sc, Paths: paths, Lanes: cfg.Lanes, AutoLanes: !cfg.FixedLanes, Seed: cfg.Seed, Log: cfg.Log}
	var trace *senderTrace
	if cfg.SenderTrace && paths == nil {
		trace = newSenderTrace()
		ecfg.ServerQUIC = trace.quicConfig()
	}
	e, err := newEnv(ctx, ecfg)
	if err != nil {
		return StripeRow{}, nil, fmt.Errorf("%s: %w", mode, err)
	}
	defer e.Close()
	if err := warmUp(ctx, func(ctx context.Context) error {
		_, err := e.get(ctx, "warm", warmPiece)
		return err
	}); err != nil {
		return StripeRow{}, nil, fmt.Errorf("%s: warm-up: %w", mode, err)
	}
	if !wire.SleepCtx(ctx, settleTime(sc)) {
		return StripeRow{}, nil, fmt.Errorf("%s: after the warm-up: %w", mode, ctx.Err())
	}
	before := e.pathBytes()
	if trace != nil {
		trace.begin(e.relay.Engine())
	}
	stop := startEvents(e.relay.Engine(), sc, cmp.Or(cfg.Log, slog.New(slog.DiscardHandler)))
	meter := startCPU()
	f, err := e.get(ctx, "bulk", cfg.Size)
	cpu := meter.stop()
	stop()
	if trace != nil {
		trace.end()
		notes = trace.notes(sc, e.relay)
	}
	if err != nil {
		return StripeRow{}, nil, fmt.Errorf("%s: %w", mode, err)
	}
	after := e.pathBytes()
	var total float64
	for name, v := range after {
		total += v - before[name]
	}
	var shares []string
	for _, p := range sc.Paths {
		if v, ok := after[p.Name]; ok && total > 0 {
			shares = append(shares, fmt.Sprintf("%s %.0f %%", p.Name, 100*(v-before[p.Name])/total))
		}
	}
	sum := offeredRate(sc, paths, f.Dur) * 8 / 1e6
	mbps := float64(cfg.Size) * 8 / 1e6 / f.Dur.Seconds()
	return StripeRow{Mode: mode, Ms: stats.Ms(f.Dur), Mbps: mbps, SumMbps: sum, Ratio: mbps / sum, Shares: strings.Join(shares, ", "),
		CPUsPerGB: perGB(cpu.proc, cfg.Size), MachineCPUsPerGB: perGB(cpu.machine, cfg.Size)}, notes, nil
}

// Warm-up: a device's ct-client has run for a while before an app's
// download, so the experiment measures one that has. warmFor of traffic
// teaches each path's RTT and rate estimates and lets ct-client judge each
// path's loss (agent/lanes.go: two windows of 500 packets, 2–3 s at the
// lossy row's 1 % on a loaded machine), in warmPiece requests; warmMax
// (120 MB, 5 s at 190 Mbit/s) bounds them should a mix be faster.
const (
	warmFor   = 5 * time.Second
	warmPiece = 3 << 20
	warmMax   = 40
)

// warmUp runs get, one warmPiece download, until warmFor has passed (at
// least once, at most warmMax times): ct's modes through ct-client
// (stripeOnce) and the MPTCP baseline over its connection (mptcpFetch)
// warm up by this one loop.
func warmUp(ctx context.Context, get func(context.Context) error) error {
	start := time.Now()
	for i := 0; i < warmMax && (i == 0 || time.Since(start) < warmFor); i++ {
		if err := get(ctx); err != nil {
			return err
		}
	}
	return nil
}

// settleTime is how long the paths of sc may still be delivering bytes
// a transfer that has just ended left on their way: each path's round
// trip and its full down queue at its rate, the longest over the paths,
// at most maxSettle. The measured download waits that long after the
// warm-up. A stripe's original stream is cut where the stripe's pieces
// begin, and its server sends on past the cut until STOP_SENDING lands:
// at its end the warm-up's last stripe can leave a queue of such bytes on
// the fast path, and a download started at once waits behind them. On the
// matrix's 4 : 2 : 1 (fake time, its round trips and 50 ms queues) the
// fast path's first byte came 45 ms after the request instead of 11, and
// the download read 0.918–0.929 of the summed rate instead of
// 0.942–0.955 (5 runs each, matrix63, 2026-11-30).
// A device's earlier downloads are seldom that close to the next.
func settleTime(sc *scenario.Scenario) time.Duration {
	var d time.Duration
	for _, p := range sc.Paths {
		rtt := time.Duration((p.Up.MeanDelayMs() + p.Down.MeanDelayMs()) * float64(time.Millisecond))
		d = max(d, rtt+queueTime(p.Down))
	}
	return min(d, maxSettle)
}

// maxSettle bounds settleTime: a path with the emulator's default queue
// (1000 packets) at a few Mbit/s would otherwise add seconds to each mode
// of the experiment, and a rate trace's queue has no one rate to drain at.
const maxSettle = time.Second

// queueTime is how long l's full down queue takes to drain at its rate
// (maxSettle for a rate trace, 0 for a link without a rate limit).
func queueTime(l scenario.Link) time.Duration {
	switch {
	case l.RateTrace != "":
		return maxSettle
	case l.RateMbps <= 0:
		return 0
	}
	bytes := float64(cmp.Or(l.QueuePackets, emu.DefaultQueuePackets)) * queuePacketBytes
	switch {
	case l.QueueBytes > 0 && l.QueuePackets > 0:
		bytes = min(bytes, float64(l.QueueBytes))
	case l.QueueBytes > 0:
		bytes = float64(l.QueueBytes)
	}
	return time.Duration(bytes / (l.RateMbps * 1e6 / 8) * float64(time.Second))
}

// queuePacketBytes is a queued packet's size where a queue is counted in
// packets: a full-sized datagram, as the scenario's rate traces count a
// delivery opportunity (an upper bound: ct's packets are ~1.4 kB).
const queuePacketBytes = 1500

// startEvents applies the scenario's timed events (rate changes, outages)
// to eng counted from now, the start of the measured transfer; neither the
// relay (newEnv) nor the lab (mptcpFetch) runs any of its own, so both
// modes meet them at the same point of their transfer, and offeredRate
// counts them from there. The returned func cancels those not yet due.
func startEvents(eng *emu.Engine, sc *scenario.Scenario, log *slog.Logger) (stop func()) {
	var timers []*time.Timer
	for _, ev := range sc.Events {
		timers = append(timers, time.AfterFunc(time.Duration(ev.AtS*float64(time.Second)), func() {
			var err error
			if ev.Set != nil {
				err = eng.Apply(ev.Path, ev.Set)
			} else if ev.OutageS > 0 {
				err = eng.Outage(ev.Path, time.Duration(ev.OutageS*float64(time.Second)))
			}
			if err != nil {
				log.Warn("scenario event", "path", ev.Path, "err", err)
			}
		}))
	}
	return func() {
		for _, t := range timers {
			t.Stop()
		}
	}
}

// pathBytes reads ct_client_path_received_bytes_total per scenario path,
// the lanes of one path ("p1", "p1#2", …; agent.Lanes) summed.
func (e *env) pathBytes() map[string]float64 {
	var buf bytes.Buffer
	e.cl.WriteMetrics(&buf)
	out := map[string]float64{}
	const prefix = `ct_client_path_received_bytes_total{path="`
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		name, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(val, 64)
		name, _, _ = strings.Cut(name, "#")
		out[name] += v
	}
	return out
}

// ccOrigin names congestion control cc and where it came from: asked
// for, or the host's default, which the lab's namespaces inherit.
func ccOrigin(cc, asked string) string {
	if asked != "" {
		return cc + " (agent.mptcp_cc)"
	}
	return cc + " (the host's default, which the lab's namespaces inherit)"
}
