package runner

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/pathsel"
)

// Summary is what summary.json holds for modes offline, trace and real:
// the common header (results.Header: schema_version, experiment, mode,
// seeds) and the fields below; docs/results.md documents each field.
type Summary struct {
	results.Header
	Scenario string   `json:"scenario,omitempty"`
	Sample   string   `json:"sample"`
	Rounds   int      `json:"rounds"`
	Paths    []string `json:"paths"`
	// BestPath is the best path of the first round (it may change with
	// events); Objective is how "best" is judged.
	BestPath  string            `json:"best_path"`
	Objective pathsel.Objective `json:"objective"`
	// ElapsedMs is the wall time of the run: for the report and the
	// command's last line, not in summary.json (which must not change from
	// one run of the same spec to the next).
	ElapsedMs  float64           `json:"-"`
	Strategies []StrategySummary `json:"strategies"`
	// RealOracle is, in mode real, the oracle measured on the real side.
	RealOracle *RealOracle `json:"real_oracle,omitempty"`
}

// RealOracle is mode real's yardstick: the best fixed path in hindsight on
// the real network, as trace mode's (PCM regret is against the best arm).
// Every path's real mean comes from the polling strategy's rounds, which
// visit the paths in turn across the whole run, so each path is measured
// as often, and under the same events, as any other; the best path is the
// one whose real samples minimise the experiment's objective.
type RealOracle struct {
	Path      string     `json:"path"`
	MeanTCTms float64    `json:"mean_tct_ms"`
	PerPath   []PathMean `json:"per_path"`
}

// PathMean is one path's real task completion time under polling.
type PathMean struct {
	Path      string  `json:"path"`
	Samples   int     `json:"samples"`
	MeanTCTms float64 `json:"mean_tct_ms"`
	// Objective is the path's value of the experiment's objective over its
	// real samples (in the sample's unit); the smallest wins.
	Objective float64 `json:"objective"`
}

// StrategySummary aggregates one strategy over its seeds. Means and
// variances are of each run's rounds, averaged over seeds (as PCM §5.1
// reports one run's "mean and variance over 1000 rounds"); percentiles pool
// every round of every seed.
type StrategySummary struct {
	Label    string `json:"label"`
	Strategy string `json:"strategy"`

	MeanTCTms     float64 `json:"mean_tct_ms"`
	MeanTCTCI95ms float64 `json:"mean_tct_ci95_ms"` // half-width over seeds
	VarTCTms2     float64 `json:"var_tct_ms2"`
	P50TCTms      float64 `json:"p50_tct_ms"`
	P95TCTms      float64 `json:"p95_tct_ms"`
	P99TCTms      float64 `json:"p99_tct_ms"`

	// Relative to the first polling and oracle strategies of the
	// experiment; absent when it has none.
	MeanReductionVsPollingPct *float64 `json:"mean_reduction_vs_polling_pct,omitempty"`
	VarReductionVsPollingPct  *float64 `json:"var_reduction_vs_polling_pct,omitempty"`
	// RatioToOracle is mean TCT over the oracle's: in modes offline and
	// trace the oracle strategy's; in mode real the real best fixed path's
	// (Summary.RealOracle), and RatioToModelOracle is then over the oracle
	// strategy's, which follows the offline model's best path: it measures
	// the model's error as much as the strategy's.
	RatioToOracle      *float64 `json:"ratio_to_oracle,omitempty"`
	RatioToModelOracle *float64 `json:"ratio_to_model_oracle,omitempty"`

	// MeanWaitMs is what the user waited per round (Run.WaitMs), averaged
	// like MeanTCTms: in mode real it adds each switch's probe and
	// validation and any failover to TCT; offline it is the mean TCT.
	MeanWaitMs float64 `json:"mean_wait_ms"`
	// WaitRatioToOracle is MeanWaitMs over the real best fixed path's mean
	// TCT (mode real): a fixed path never switches, so this is the cost of
	// choosing paths in what the user waits.
	WaitRatioToOracle *float64 `json:"wait_ratio_to_oracle,omitempty"`
	// OtherPathRequests is the mean number per run of requests carried on
	// another path than the strategy chose (Run.Elsewhere).
	OtherPathRequests float64 `json:"other_path_requests"`
	// FindRounds is the mean over runs of the rounds from the last change
	// of the best path (by the model) to the strategy's first request on
	// the new best path (the run's remaining rounds if it never got
	// there); nil when the best path never changes.
	FindRounds *float64 `json:"find_rounds,omitempty"`
	// ProbeBytesPerRequest is what out-of-band probes cost on the wire
	// per round (Run.ProbeBytes over the rounds; where the Env counts it).
	ProbeBytesPerRequest float64 `json:"probe_bytes_per_request,omitempty"`

	// OfflineMeanTCTms is, for a real run, the mean TCT of the same
	// strategy on the offline model (same seeds and task sizes).
	OfflineMeanTCTms *float64 `json:"offline_mean_tct_ms,omitempty"`

	HitRate        float64 `json:"best_path_hit_rate"`
	FinalHitRate   float64 `json:"final_best_path_hit_rate"` // last 10 % of rounds
	CumRegret      float64 `json:"cumulative_regret"`        // pseudo-regret, objective units
	RegretEq22     float64 `json:"regret_eq22"`
	SwitchesPer100 float64 `json:"switches_per_100_rounds"`
}

// Summarize computes the summary of a result.
func Summarize(r *Result) *Summary {
	s := r.Spec
	sum := &Summary{
		Header: results.NewHeader(s.Name, s.Mode, results.Seeds(s.Seed, s.Seeds)),
		Sample: s.Sample, Rounds: s.Rounds, Paths: r.Paths, Objective: s.Objective.objective(),
		ElapsedMs: float64(r.Elapsed.Microseconds()) / 1000,
	}
	if s.scenario != nil {
		sum.Scenario = s.scenario.Name
	}
	if len(r.Best) > 0 {
		sum.BestPath = r.Paths[r.Best[0]]
	}
	for i, runs := range r.Runs {
		sum.Strategies = append(sum.Strategies, summarizeRuns(s.Strategies[i], runs))
	}
	if r.Offline != nil {
		for i, runs := range r.Offline.Runs {
			off := summarizeRuns(s.Strategies[i], runs)
			sum.Strategies[i].OfflineMeanTCTms = ptr(off.MeanTCTms)
		}
	}
	polling, oracle := sum.find(pathsel.Polling), sum.find(pathsel.Oracle)
	if s.Mode == ModeReal {
		sum.RealOracle = realOracle(r)
	}
	for i := range sum.Strategies {
		st := &sum.Strategies[i]
		if polling != nil {
			st.MeanReductionVsPollingPct = ptr(100 * (1 - st.MeanTCTms/polling.MeanTCTms))
			st.VarReductionVsPollingPct = ptr(100 * (1 - st.VarTCTms2/polling.VarTCTms2))
		}
		switch {
		case sum.RealOracle != nil:
			st.RatioToOracle = ptr(st.MeanTCTms / sum.RealOracle.MeanTCTms)
			st.WaitRatioToOracle = ptr(st.MeanWaitMs / sum.RealOracle.MeanTCTms)
			if oracle != nil {
				st.RatioToModelOracle = ptr(st.MeanTCTms / oracle.MeanTCTms)
			}
		case oracle != nil:
			st.RatioToOracle = ptr(st.MeanTCTms / oracle.MeanTCTms)
		}
	}
	return sum
}

// realOracle measures the best fixed path in hindsight from the polling
// runs (every seed); nil without a polling strategy (Load requires one in
// mode real) or when a path was never measured.
func realOracle(r *Result) *RealOracle {
	si := -1
	for i, st := range r.Spec.Strategies {
		if st.Strategy == pathsel.Polling {
			si = i
			break
		}
	}
	if si < 0 {
		return nil
	}
	k := len(r.Paths)
	tct := make([][]float64, k)
	sample := make([][]float64, k)
	for _, run := range r.Runs[si] {
		for t, p := range run.Path {
			x := run.TCTms[t]
			tct[p] = append(tct[p], x)
			if r.Spec.Sample == SampleTCTPerByte {
				x /= float64(run.Size[t])
			}
			sample[p] = append(sample[p], x)
		}
	}
	obj := r.Spec.Objective.objective()
	o := &RealOracle{}
	best := math.Inf(1)
	for p := range k {
		if len(tct[p]) == 0 {
			return nil
		}
		m, v := stats.MeanVar(sample[p])
		pm := PathMean{Path: r.Paths[p], Samples: len(tct[p]), MeanTCTms: stats.Mean(tct[p]), Objective: obj.Value(m, v)}
		o.PerPath = append(o.PerPath, pm)
		if pm.Objective < best {
			best, o.Path, o.MeanTCTms = pm.Objective, pm.Path, pm.MeanTCTms
		}
	}
	return o
}

func ptr(v float64) *float64 { return &v }

func (s *Summary) find(strategy pathsel.Strategy) *StrategySummary {
	for i := range s.Strategies {
		if s.Strategies[i].Strategy == string(strategy) {
			return &s.Strategies[i]
		}
	}
	return nil
}

func summarizeRuns(st StrategySpec, runs []*Run) StrategySummary {
	out := StrategySummary{Label: st.Label, Strategy: string(st.Strategy)}
	var all []float64
	means := make([]float64, len(runs))
	var hits, finalHits, finalRounds, switches, rounds int
	for i, run := range runs {
		m, v := stats.MeanVar(run.TCTms)
		means[i] = m
		out.MeanWaitMs += stats.Mean(run.WaitMs) / float64(len(runs))
		out.OtherPathRequests += float64(run.Elsewhere) / float64(len(runs))
		out.ProbeBytesPerRequest += float64(run.ProbeBytes) / float64(len(run.TCTms)) / float64(len(runs))
		if f, ok := findRounds(run); ok {
			out.FindRounds = ptr(*cmp.Or(out.FindRounds, ptr(0)) + f/float64(len(runs)))
		}
		out.VarTCTms2 += v / float64(len(runs))
		out.CumRegret += run.Regret[len(run.Regret)-1] / float64(len(runs))
		out.RegretEq22 += run.Eq22 / float64(len(runs))
		all = append(all, run.TCTms...)
		final := len(run.Hit) - max(1, len(run.Hit)/10)
		for t, h := range run.Hit {
			if h {
				hits++
				if t >= final {
					finalHits++
				}
			}
			if t >= final {
				finalRounds++
			}
			if t > 0 && run.Path[t] != run.Path[t-1] {
				switches++
			}
		}
		rounds += len(run.Hit)
	}
	out.MeanTCTms = stats.Mean(means)
	// Over one seed there is no spread to speak of: 0, not NaN (JSON).
	if len(means) > 1 {
		out.MeanTCTCI95ms = stats.CI95(means)
	}
	q := stats.Quantiles(all, 0.5, 0.95, 0.99)
	out.P50TCTms, out.P95TCTms, out.P99TCTms = q[0], q[1], q[2]
	out.HitRate = float64(hits) / float64(rounds)
	out.FinalHitRate = float64(finalHits) / float64(finalRounds)
	out.SwitchesPer100 = 100 * float64(switches) / float64(rounds)
	return out
}

// findRounds is the rounds from the last change of run's best path to its
// first request on the new one (the rounds left if none); false when the
// best path never changes.
func findRounds(run *Run) (float64, bool) {
	c := 0
	for t := 1; t < len(run.Best); t++ {
		if run.Best[t] != run.Best[t-1] {
			c = t
		}
	}
	if c == 0 {
		return 0, false
	}
	for t := c; t < len(run.Best); t++ {
		if run.Path[t] == run.Best[t] {
			return float64(t - c), true
		}
	}
	return float64(len(run.Best) - c), true
}

// WriteTable prints the summary as an aligned text table.
func (s *Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tmean TCT ms\t±95%\tvar ms²\tp95 ms\tp99 ms\tvs polling\tvs oracle\tbest-path hits\tcum. regret\tswitches/100\t")
	for _, st := range s.Strategies {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%.1f%%\t%.1f\t%.1f\t\n",
			st.Label, st.MeanTCTms, st.MeanTCTCI95ms, st.VarTCTms2, st.P95TCTms, st.P99TCTms,
			optional(st.MeanReductionVsPollingPct, "%+.2f%%", -1), optional(st.RatioToOracle, "%.3f×", 1),
			100*st.HitRate, st.CumRegret, st.SwitchesPer100)
	}
	return tw.Flush()
}

// optional formats *v (times sign, so a reduction prints as a negative
// change), or "–" when absent.
func optional(v *float64, format string, sign float64) string {
	if v == nil {
		return "–"
	}
	x := sign * *v
	if x == 0 {
		x = 0 // not "-0.00%"
	}
	return strings.TrimSpace(fmt.Sprintf(format, x))
}
