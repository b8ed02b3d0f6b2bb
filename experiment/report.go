package experiment

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hetquic/hetquic/internal/results"
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
	fmt.Fprintf(&b, "\n- %d rounds × %d seeds (%d…%d) × %d strategies, in %.0f ms\n",
		spec.Rounds, spec.Seeds, spec.Seed, spec.Seed+uint64(spec.Seeds)-1, len(spec.Strategies), s.ElapsedMs)
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
			fmt.Fprintf(&b, "- round %d, path %s: `%s` %s\n", e.Round, e.Path, e.Set, lasting)
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
		main.Header = append(main.Header, "× model oracle")
		for i, st := range s.Strategies {
			main.Rows[i] = append(main.Rows[i], optional(st.RatioToModelOracle, "%.3f", 1))
		}
		main.Note += fmt.Sprintf(" × oracle (real) is over the mean TCT of the best fixed path in hindsight on the real network, %s (%.3f ms; "+
			"each path measured by polling's rounds); × model oracle is over the oracle strategy, which follows the offline model's best path. "+
			"Best-path hits and regret are judged by the model.", o.Path, o.MeanTCTms)
	}
	tables := []results.Table{main}
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

func rateText(mbps float64, trace string) string {
	switch {
	case trace != "":
		return "trace " + trace
	case mbps == 0:
		return "unlimited"
	}
	return fmt.Sprintf("%g", mbps)
}
