package runner

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/pathsel"
)

// figureCaptions explain each figure to a reader who has not seen the code.
var figureCaptions = map[string]string{
	figTCT:      "Task completion time per round, averaged over seeds (PCM journal Fig. 10).",
	figRegret:   "Cumulative pseudo-regret: how much worse than always taking the best path each strategy did so far, in expectation (Figs. 11 and 18). Log scale.",
	figBestProb: "Fraction of rounds so far in which the strategy chose a best path, averaged over seeds (Figs. 12 and 17).",
	figChosen:   "The path each strategy chose round by round, first seed; the green band is the best path (Figs. 13, 14 and 16).",
	figCDF:      "Distribution of task completion times over all rounds and seeds.",
	figPaths:    "Each path's expected task completion time round by round: the network the strategies faced, with the experiment's events (Figs. 13 and 15).",
}

// Report is report.md: the setup, the summary's Tables and the figures
// (referenced by file name, next to the page).
func Report(r *Result, s *Summary, figs []string) string {
	var b strings.Builder
	spec := r.Spec
	fmt.Fprintf(&b, "# Experiment %s\n\n", spec.Name)
	if d := strings.TrimSpace(spec.Description); d != "" {
		fmt.Fprintf(&b, "%s\n\n", d)
	}
	fmt.Fprintf(&b, "## Setup\n\n")
	fmt.Fprintf(&b, "- mode: %s", spec.Mode)
	if spec.scenario != nil {
		fmt.Fprintf(&b, ", scenario `%s`", spec.scenario.Name)
	}
	// No wall time here: a report is a function of the spec, so the same
	// experiment run in one process or in merged shards writes the same file.
	fmt.Fprintf(&b, "\n- %d rounds × %d seeds (%d…%d) × %d strategies\n",
		spec.Rounds, spec.Seeds, spec.Seed, spec.Seed+uint64(spec.Seeds)-1, len(spec.Strategies))
	if len(spec.Task.Sizes) > 0 {
		fmt.Fprintf(&b, "- task sizes (bytes, drawn uniformly per round): %v\n", spec.Task.Sizes)
	} else {
		fmt.Fprintf(&b, "- task size: %d bytes\n", spec.Task.SizeBytes)
	}
	o := s.Objective
	fmt.Fprintf(&b, "- strategies learn from: %s; the best path minimises %.2g·E + %.2g·%s of it\n", spec.Sample, o.A, 1-o.A, o.Spread)
	if s.BestPath != "" {
		fmt.Fprintf(&b, "- best path at the start: **%s**\n", s.BestPath)
	}
	if sc := spec.scenario; sc != nil {
		fmt.Fprintf(&b, "\n| path | delay ms up/down | jitter ms up/down | loss up/down | rate Mbit/s down |\n|---|---|---|---|---|\n")
		for _, p := range sc.Paths {
			fmt.Fprintf(&b, "| %s | %g / %g | %g / %g | %g / %g | %s |\n", p.Name,
				p.Up.DelayMs, p.Down.DelayMs, p.Up.JitterMs, p.Down.JitterMs,
				p.Up.MeanLoss(), p.Down.MeanLoss(), rateText(p.Down.RateMbps, p.Down.RateTrace))
		}
	}
	if len(spec.Events) > 0 {
		fmt.Fprintf(&b, "\nEvents:\n\n")
		for _, e := range spec.Events {
			lasting := "for good"
			if e.ForRounds > 0 {
				lasting = fmt.Sprintf("for %d rounds", e.ForRounds)
			}
			what := fmt.Sprintf("`%s`", e.Set)
			if e.Remove {
				what = "removed"
			}
			fmt.Fprintf(&b, "- round %d, path %s: %s %s\n", e.Round, e.Path, what, lasting)
		}
	}
	fmt.Fprintf(&b, "\n## Results\n\n")
	var md strings.Builder
	results.WriteTables(&md, s.Tables())
	b.WriteString(md.String())
	fmt.Fprintf(&b, "\n## Figures\n\n")
	for _, f := range figs {
		b.WriteString(results.FigureMarkdown(f, figureCaptions[filepath.Base(f)]))
	}
	return b.String()
}

// Tables are the report's result tables: what `hetquic exp run NAME --md`
// prints. Nothing in them varies between runs of the same spec.
func (s *Summary) Tables() []results.Table {
	main := results.Table{
		Header: []string{"strategy", "mean TCT ms (±95%)", "var ms²", "p50 / p95 / p99 ms", "mean vs polling", "var vs polling",
			"× oracle", "best-path hits (last 10%)", "cum. regret", "Eq. 22", "switches /100 rounds"},
		Note: "\"vs polling\" is the change of the mean (variance) relative to polling: −59 % means 59 % lower. " +
			"±95 % is the half-width of Student's t interval over the seeds' mean TCTs. " +
			"Regret is in the objective's unit; Eq. 22 is the PCM journal's regret (docs/experiments.md, \"Regret\").",
	}
	for _, st := range s.Strategies {
		main.Rows = append(main.Rows, []string{
			st.Label, fmt.Sprintf("%.3f (±%.3f)", st.MeanTCTms, st.MeanTCTCI95ms), fmt.Sprintf("%.2f", st.VarTCTms2),
			fmt.Sprintf("%.2f / %.2f / %.2f", st.P50TCTms, st.P95TCTms, st.P99TCTms),
			optional(st.MeanReductionVsPollingPct, "%+.2f%%", -1), optional(st.VarReductionVsPollingPct, "%+.2f%%", -1),
			optional(st.RatioToOracle, "%.3f", 1), fmt.Sprintf("%.1f%% (%.1f%%)", 100*st.HitRate, 100*st.FinalHitRate),
			fmt.Sprintf("%.1f", st.CumRegret), fmt.Sprintf("%.1f", st.RegretEq22), fmt.Sprintf("%.1f", st.SwitchesPer100),
		})
	}
	if o := s.RealOracle; o != nil {
		main.Header[6] = "× oracle (real)"
		main.Header = append(main.Header, "× model oracle", "wait ms", "wait × oracle (real)", "on another path", "rounds to find", "probe B /request")
		for i, st := range s.Strategies {
			main.Rows[i] = append(main.Rows[i], optional(st.RatioToModelOracle, "%.3f", 1),
				fmt.Sprintf("%.3f", st.MeanWaitMs), optional(st.WaitRatioToOracle, "%.3f", 1), fmt.Sprintf("%.1f", st.OtherPathRequests),
				optional(st.FindRounds, "%.1f", 1), fmt.Sprintf("%.0f", st.ProbeBytesPerRequest))
		}
		main.Note += " Wait is what the user waited per round: TCT plus each switch's probe and validation and any failover" +
			" (TCT starts at the request stream, after the switch); on another path counts the requests per run that a path" +
			" other than the chosen one carried (the strategy learnt from that path); rounds to find counts the rounds from the last" +
			" change of the best path (by the model) to the first request on the new one (the rounds left if none; – when it never" +
			" changes); probe B /request is what out-of-band probes of idle paths cost on the wire per round (QUIC bytes both ways," +
			" side connections' handshakes included; 0 for strategies that do not probe)."
		main.Note += fmt.Sprintf(" × oracle (real) is over the mean TCT of the best fixed path in hindsight on the real network, %s (%.3f ms; "+
			"each path measured by polling's rounds); × model oracle is over the oracle strategy, which follows the offline model's best path. "+
			"Best-path hits and regret are judged by the model.", o.Path, o.MeanTCTms)
	}
	tables := []results.Table{main}
	if t, ok := s.defaultTable(); ok {
		tables = append(tables, t)
	}
	if len(s.Strategies) > 0 && s.Strategies[0].OfflineMeanTCTms != nil {
		off := results.Table{
			Caption: "Real vs offline model: the same strategies, seeds and task sizes on the offline TCT model of the scenario.",
			Header:  []string{"strategy", "real mean TCT ms", "offline mean TCT ms", "real / offline"},
		}
		for _, st := range s.Strategies {
			o := *st.OfflineMeanTCTms
			off.Rows = append(off.Rows, []string{st.Label, fmt.Sprintf("%.3f", st.MeanTCTms), fmt.Sprintf("%.3f", o), fmt.Sprintf("%.3f", st.MeanTCTms/o)})
		}
		tables = append(tables, off)
	}
	return tables
}

// defaultTable sets hetquic's default against the oracle and against the
// strategy with the least cumulative regret among the others (the
// default's bar: ≤ 1.05 × oracle on stationary paths, ≤ 1.10 × on changing ones, and
// regret at most 10 % above the best other's). Absent without both.
func (s *Summary) defaultTable() (results.Table, bool) {
	def := s.find(pathsel.Hetquic)
	if def == nil || def.RatioToOracle == nil {
		return results.Table{}, false
	}
	var best *StrategySummary
	for i := range s.Strategies {
		st := &s.Strategies[i]
		if st == def || st.Strategy == string(pathsel.Oracle) {
			continue
		}
		if best == nil || st.CumRegret < best.CumRegret {
			best = st
		}
	}
	if best == nil {
		return results.Table{}, false
	}
	ratio := "–"
	if best.CumRegret > 0 {
		ratio = fmt.Sprintf("%.2f", def.CumRegret/best.CumRegret)
	}
	return results.Table{
		Caption: "The default against the oracle and against the other strategy with the least cumulative regret.",
		Header:  []string{"default × oracle", "default cum. regret", "least-regret other", "its × oracle", "its cum. regret", "regret ratio"},
		Rows: [][]string{{fmt.Sprintf("%.3f", *def.RatioToOracle), fmt.Sprintf("%.1f", def.CumRegret), best.Label,
			optional(best.RatioToOracle, "%.3f", 1), fmt.Sprintf("%.1f", best.CumRegret), ratio}},
	}, true
}

func rateText(mbps float64, trace string) string {
	switch {
	case trace != "":
		return "trace " + trace
	case mbps == 0:
		return "unlimited"
	}
	return fmt.Sprintf("%g", mbps)
}
