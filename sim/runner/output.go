package runner

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
)

// Summary aggregates the runs of one (variant, path count) over seeds.
type Summary struct {
	Label     string `json:"label"`
	Scheduler string `json:"scheduler"`
	CC        string `json:"cc"`
	Scheme    string `json:"scheme,omitempty"`
	Paths     int    `json:"paths,omitempty"`
	Runs      int    `json:"runs"`
	Completed int    `json:"completed_runs"`

	GoodputMbps    float64 `json:"goodput_mbps"` // mean over runs
	GoodputStdMbps float64 `json:"goodput_std_mbps"`
	// Flow completion time quartiles over every flow of every run (s);
	// flows that did not finish are left out and counted in Unfinished.
	FCTP25S  float64 `json:"fct_p25_s"`
	FCTP50S  float64 `json:"fct_p50_s"`
	FCTP75S  float64 `json:"fct_p75_s"`
	FCTMeanS float64 `json:"fct_mean_s"`
	// FCTIQRS is FCTP75S − FCTP25S, the spread a quartile plot shows
	// (min-FCT Fig. 7 compares the schemes by it); a field of its own so
	// a claim can read it as one number.
	FCTIQRS    float64 `json:"fct_iqr_s"`
	Unfinished int     `json:"unfinished_flows"`
	// Per-packet (chunk) delivery delay over all runs, ms.
	DelayP50Ms     float64 `json:"delivery_delay_p50_ms"`
	DelayP90Ms     float64 `json:"delivery_delay_p90_ms"`
	DelayP99Ms     float64 `json:"delivery_delay_p99_ms"`
	ReorderMeanMs  float64 `json:"reordering_delay_mean_ms"`
	LossRate       float64 `json:"loss_rate"`      // packets declared lost / sent
	DropRate       float64 `json:"link_drop_rate"` // link drops / sent
	SegmentsMissed float64 `json:"segment_miss_ratio,omitempty"`
	EventsPerRun   float64 `json:"events_per_run"`
	// WallPerRunS is wall time, so not in summary.json (which must be the
	// same on every run of the spec); the command prints it.
	WallPerRunS float64 `json:"-"`
	DelayP95Ms  float64 `json:"delivery_delay_p95_ms"`
	// DelayQuantileRelErr is the relative error bound of the delay
	// quantiles when a run was too long to keep every chunk's delay
	// (SketchRelError); absent when they are exact.
	DelayQuantileRelErr float64 `json:"delivery_delay_quantile_rel_error,omitempty"`
	// Stream workloads (streams, video, reqresp, cbr): per-stream time
	// (a frame's delay from release, a response's time from its request,
	// a stream's completion time) quantiles; the share of deadlines missed
	// (video); the application delay (write → in-order delivery) p90.
	StreamP50Ms   float64 `json:"stream_time_p50_ms,omitempty"`
	StreamP90Ms   float64 `json:"stream_time_p90_ms,omitempty"`
	DeadlineMiss  float64 `json:"deadline_miss_ratio,omitempty"`
	Deadlines     int     `json:"deadlines,omitempty"`
	AppDelayP90Ms float64 `json:"app_delay_p90_ms,omitempty"`
	// LEO specs (thesis ch. 3) only.
	LEO *LEOSummary `json:"leo,omitempty"`
	// HandoversPerRun (drives only): handovers begun before the
	// transfer's last delivery, the mean over runs.
	HandoversPerRun *float64 `json:"handovers_per_run,omitempty"`
}

// LEOSummary is what a LEO spec adds to a Summary.
type LEOSummary struct {
	LossEvents float64 `json:"loss_events_per_run"`       // congestion signals seen
	Reductions float64 `json:"window_reductions_per_run"` // signals acted on
	// Mean goodput over the bins where both subflows share a satellite:
	// MPQUIC's aggregate and the background TCP flows' on that satellite.
	// SharedBins counts those bins over the runs; with none, both means
	// are 0 (summary.json holds no NaN), and a ratio of them is refused.
	SharedMPMbps  float64 `json:"shared_mpquic_mbps"`
	SharedTCPMbps float64 `json:"shared_tcp_mbps"`
	SharedBins    int     `json:"shared_bins"`
	// Recovery times to the path BDP (Fig. 3.11; see LEOResult): p99 over
	// the runs' samples, the sample counts and the phases that never got
	// there.
	RecoverySSP99 float64 `json:"recovery_ss_p99_ms"`
	RecoveryCAP99 float64 `json:"recovery_ca_p99_ms"`
	RecoverySSN   int     `json:"recovery_ss_samples"`
	RecoveryCAN   int     `json:"recovery_ca_samples"`
	SSUnrecovered int     `json:"recovery_ss_unrecovered"`
	CAUnrecovered int     `json:"recovery_ca_unrecovered"`
}

// Summaries aggregates r by (variant, path count) in Jobs order.
func (r *Result) Summaries() []Summary {
	var out []Summary
	idx := map[[2]int]int{}
	type acc struct {
		gp, fct           []float64
		runs              []*RunResult
		reorder           []float32
		reorderSum        float64
		chunks            int
		stream, app       []float32
		dl, missed        int
		sent, lost, drops uint64
		miss, segs        int
		events, wall      float64
		handovers         int
	}
	var accs []*acc
	for _, run := range r.Runs {
		k := [2]int{run.Variant, run.Paths}
		i, ok := idx[k]
		if !ok {
			v := r.Spec.Variants[run.Variant]
			i = len(out)
			idx[k] = i
			out = append(out, Summary{Label: v.Label, Scheduler: v.Scheduler, CC: v.CC, Scheme: v.Scheme, Paths: run.Paths})
			accs = append(accs, &acc{})
		}
		s, a := &out[i], accs[i]
		s.Runs++
		if run.Completed {
			s.Completed++
		}
		a.gp = append(a.gp, run.GoodputMbps)
		for _, f := range run.Flows {
			if f.FCTS >= 0 {
				a.fct = append(a.fct, f.FCTS)
			} else {
				s.Unfinished++
			}
		}
		a.runs = append(a.runs, run)
		a.reorder = append(a.reorder, run.ReorderMs...)
		a.reorderSum += run.ReorderSumMs
		a.chunks += run.Chunks
		a.stream = append(a.stream, run.StreamMs...)
		a.app = append(a.app, run.AppDelayMs...)
		a.dl += run.Deadlines
		a.missed += run.Missed
		a.sent += run.SentPkts
		a.lost += run.LostPkts
		a.drops += run.Drops
		a.miss += run.SegmentsMissed
		a.segs += run.Segments
		a.events += float64(run.Events)
		a.wall += run.WallS
		a.handovers += run.Handovers
	}
	for i := range out {
		s, a := &out[i], accs[i]
		s.GoodputMbps, s.GoodputStdMbps = stats.MeanStd(a.gp)
		if len(a.gp) == 1 {
			s.GoodputStdMbps = 0
		}
		fq := stats.Quantiles(a.fct, .25, .5, .75)
		s.FCTP25S, s.FCTP50S, s.FCTP75S = orZero(fq[0]), orZero(fq[1]), orZero(fq[2])
		s.FCTIQRS = s.FCTP75S - s.FCTP25S
		s.FCTMeanS = orZero(stats.Mean(a.fct))
		dq, relErr, err := delayQuantiles(a.runs, .5, .9, .95, .99)
		if err != nil {
			dq = []float64{math.NaN(), 0, 0, 0} // summary.json refuses a NaN, naming it
		}
		s.DelayP50Ms, s.DelayP90Ms, s.DelayP95Ms, s.DelayP99Ms = orZero(dq[0]), orZero(dq[1]), orZero(dq[2]), orZero(dq[3])
		if err != nil {
			s.DelayP50Ms = math.NaN()
		}
		s.DelayQuantileRelErr = relErr
		if len(a.reorder) == a.chunks {
			s.ReorderMeanMs = orZero(stats.Mean(toF64(a.reorder)))
		} else if a.chunks > 0 { // a sketched run kept no per-chunk delays: the exact running sum
			s.ReorderMeanMs = a.reorderSum / float64(a.chunks)
		}
		if a.sent > 0 {
			s.LossRate = float64(a.lost) / float64(a.sent)
			s.DropRate = float64(a.drops) / float64(a.sent)
		}
		if a.segs > 0 {
			s.SegmentsMissed = float64(a.miss) / float64(a.segs)
		}
		s.EventsPerRun, s.WallPerRunS = a.events/float64(s.Runs), a.wall/float64(s.Runs)
		if r.Spec.Mobility != nil {
			h := float64(a.handovers) / float64(s.Runs)
			s.HandoversPerRun = &h
		}
		sq := stats.Quantiles(toF64(a.stream), .5, .9)
		s.StreamP50Ms, s.StreamP90Ms = orZero(sq[0]), orZero(sq[1])
		s.AppDelayP90Ms = orZero(stats.Quantiles(toF64(a.app), .9)[0])
		if s.Deadlines = a.dl; a.dl > 0 {
			s.DeadlineMiss = float64(a.missed) / float64(a.dl)
		}
	}
	if r.Spec.LEO != nil {
		for i := range out {
			out[i].LEO = leoSummary(r, out[i].Label)
		}
	}
	return out
}

func leoSummary(r *Result, label string) *LEOSummary {
	var runs []*RunResult
	for _, run := range r.Runs {
		if run.Label == label && run.LEO != nil {
			runs = append(runs, run)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	ls := &LEOSummary{}
	var ss, ca []float64
	for _, run := range runs {
		ls.LossEvents += float64(run.LEO.Signals.LossEvents) / float64(len(runs))
		ls.Reductions += float64(run.LEO.Signals.Reductions) / float64(len(runs))
		ss = append(ss, run.LEO.RecoverySSMs...)
		ca = append(ca, run.LEO.RecoveryCAMs...)
		ls.SSUnrecovered += run.LEO.SSUnrecovered
		ls.CAUnrecovered += run.LEO.CAUnrecovered
	}
	ls.SharedMPMbps, ls.SharedTCPMbps, ls.SharedBins = friendliness(runs)
	ls.RecoverySSP99, ls.RecoveryCAP99 = orZero(stats.Quantiles(ss, .99)[0]), orZero(stats.Quantiles(ca, .99)[0])
	ls.RecoverySSN, ls.RecoveryCAN = len(ss), len(ca)
	return ls
}

func toF64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// orZero maps the NaN of a statistic over no samples (no flow finished, no
// packet reordered) to 0, which summary.json can hold; the counts beside it
// (unfinished_flows, recovery_*_samples) say that there were none.
func orZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// runName is a run's file-name stem.
func runName(r *RunResult) string {
	n := safe(r.Label)
	if r.Paths > 0 {
		n += fmt.Sprintf("_p%d", r.Paths)
	}
	return fmt.Sprintf("%s_seed%d", n, r.Seed)
}

func safe(s string) string {
	return strings.Map(func(c rune) rune {
		if c == '/' || c == ' ' || c == '\\' || c == ':' {
			return '_'
		}
		return c
	}, s)
}

// SummaryFile is what summary.json holds for mode sim: the common header
// (results.Header) and one Summary per (variant, path count), in Jobs
// order. docs/results.md documents the fields.
type SummaryFile struct {
	results.Header
	Summaries []Summary `json:"summaries"`
}

// SummaryFile is r's summary.json.
func (r *Result) SummaryFile() *SummaryFile {
	return &SummaryFile{Header: results.NewHeader(r.Spec.Name, "sim", results.Seeds(r.Spec.Seed, r.Spec.Seeds)), Summaries: r.Summaries()}
}

// f formats a number for a CSV cell with prec decimals.
func f(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

// WriteAll writes the per-run CSV files, summary.json, the figures (PNG and
// SVG) and report.md into dir and returns the files written.
func WriteAll(dir string, r *Result) ([]string, error) {
	d, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	bin := r.Spec.BinMs / 1e3
	for _, run := range r.Runs {
		base := "runs/" + runName(run)
		if err := d.WriteCSV(base+"_goodput.csv", []string{"t_s", "goodput_mbps"}, len(run.Bins), func(i int) []string {
			return []string{f(float64(i)*bin, 3), f(run.Bins[i], 4)}
		}); err != nil {
			return nil, err
		}
		// A run that sketched its delays (delays.go) has no per-chunk
		// CSV: exact_chunk_delays opts a long transfer into one.
		if run.DelaySketch == nil {
			if err := d.WriteCSV(base+"_delay.csv", []string{"chunk", "delivery_delay_ms", "reordering_delay_ms"}, len(run.DelayMs), func(i int) []string {
				return []string{strconv.Itoa(i), f(float64(run.DelayMs[i]), 3), f(float64(run.ReorderMs[i]), 3)}
			}); err != nil {
				return nil, err
			}
		}
		if err := d.WriteCSV(base+"_flows.csv", []string{"flow", "src", "dst", "start_s", "fct_s", "bytes", "paths"}, len(run.Flows), func(i int) []string {
			fl := run.Flows[i]
			return []string{strconv.Itoa(i), fl.Src, fl.Dst, f(fl.StartS, 3), f(fl.FCTS, 4), strconv.FormatInt(fl.Bytes, 10), strings.Join(fl.Paths, "|")}
		}); err != nil {
			return nil, err
		}
		if l := run.LEO; l != nil && len(l.Cwnd) > 0 {
			if err := d.WriteCSV(base+"_cwnd.csv", []string{"t_s", "shared", "bg_tcp_mbps", "cwnd_path0_pkts", "cwnd_path1_pkts"}, len(l.Cwnd[0]), func(i int) []string {
				c1 := float32(0)
				if len(l.Cwnd) > 1 {
					c1 = l.Cwnd[1][i]
				}
				return []string{f(float64(i+1)*bin, 3), strconv.FormatBool(l.SharedBins[i]), f(float64(l.BgBins[i]), 3), f(float64(l.Cwnd[0][i]), 1), f(float64(c1), 1)}
			}); err != nil {
				return nil, err
			}
		}
	}
	sf := r.SummaryFile()
	if err := d.WriteSummary(sf); err != nil {
		return nil, err
	}
	figs, err := writeFigures(dir, r)
	if err != nil {
		return nil, err
	}
	for _, fig := range figs {
		d.AddFigure(fig)
	}
	if err := d.WriteReport(report(r, sf.Summaries, figs)); err != nil {
		return nil, err
	}
	return d.Files(), nil
}

// report renders report.md.
func report(r *Result, sums []Summary, figs []string) string {
	s := r.Spec
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", s.Name)
	if s.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(s.Description))
	}
	net := "scenario `" + s.Scenario + "`"
	if s.Mobility != nil {
		net = fmt.Sprintf("a generated highway drive at %g km/h from %g m (sim/mobility)", s.Mobility.SpeedKmh, s.Mobility.StartM)
	}
	if s.LEO != nil {
		net = s.leoDescription()
	}
	if s.tp != nil {
		net = fmt.Sprintf("topology `%s` (%d nodes, %d links), %d flows every %g s", s.Topology, len(s.tp.Nodes), len(s.tp.Links), s.Flows.Count, s.Flows.IntervalS)
	}
	app := s.App.describe(fmt.Sprintf("bulk %g MB", s.App.SizeMB))
	fmt.Fprintf(&b, "Simulated with `hetquic exp run`: %s; %s; %d seed(s) from %d; at most %g s per run.\n\n", net, app, s.Seeds, s.Seed, s.DurationS)
	results.WriteTables(&b, Tables(s, sums))
	b.WriteString("\n")
	for _, fig := range figs {
		b.WriteString(results.FigureMarkdown(fig, ""))
	}
	return b.String()
}

// identicalRows names the variants whose rows match in every column but the
// label ("RR, minRTT and BLEST give identical results."), "" when none do:
// a reader questions equal rows, so the report says they are no typo.
func identicalRows(rows [][]string) string {
	var groups [][]string
	seen := map[string]int{}
	for _, r := range rows {
		key := strings.Join(r[1:], "\x00")
		if i, ok := seen[key]; ok {
			groups[i] = append(groups[i], r[0])
			continue
		}
		seen[key] = len(groups)
		groups = append(groups, []string{r[0]})
	}
	var parts []string
	for _, g := range groups {
		if len(g) > 1 {
			parts = append(parts, joinAnd(g))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + " give identical results (bit for bit, every seed)."
}

// identicalWhy is the reason schedulers tie, for the application kinds where
// it is known (sim/README.md, "Schedulers").
func identicalWhy(s *Spec) string {
	if s.App.Kind != "" && s.App.Kind != "bulk" {
		return " They differ only where several paths have room at once."
	}
	return " A bulk transfer is window-limited: every ACK frees room on exactly one path, and any scheduler must send there; " +
		"schedulers differ only when several paths have room at once (start and tail, application-limited traffic, many paths) " +
		"or the receive window binds (sim/README.md, \"Shipped experiments\")."
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// Tables are the report's tables (what `hetquic exp run NAME --md`
// prints): deterministic, no wall times.
func Tables(s *Spec, sums []Summary) []results.Table {
	dash := s.App.Kind == "dash"
	t := results.Table{
		Header: []string{"variant", "paths", "goodput (Mbit/s)", "FCT p25/p50/p75 (s)", "delivery delay p50/p90/p99 (ms)", "mean reordering delay (ms)", "loss", "unfinished"},
		Note: "Goodput: mean ± standard deviation over seeds. Delivery delay: first transmission of a packet's data to its in-order delivery to the application; " +
			"reordering delay: arrival to in-order delivery. Loss: packets the sender declared lost over packets sent.",
	}
	if dash {
		t.Header = append(t.Header, "segments late")
	}
	for _, x := range sums {
		paths := "all"
		if x.Paths > 0 {
			paths = fmt.Sprint(x.Paths)
		}
		row := []string{x.Label, paths, fmt.Sprintf("%.2f ± %.2f", x.GoodputMbps, x.GoodputStdMbps),
			fmt.Sprintf("%.2f / %.2f / %.2f", x.FCTP25S, x.FCTP50S, x.FCTP75S),
			fmt.Sprintf("%.1f / %.1f / %.1f", x.DelayP50Ms, x.DelayP90Ms, x.DelayP99Ms),
			fmt.Sprintf("%.2f", x.ReorderMeanMs), fmt.Sprintf("%.3f %%", 100*x.LossRate), fmt.Sprint(x.Unfinished)}
		if dash {
			row = append(row, fmt.Sprintf("%.1f %%", 100*x.SegmentsMissed))
		}
		t.Rows = append(t.Rows, row)
	}
	if same := identicalRows(t.Rows); same != "" {
		t.Note += " " + same + identicalWhy(s)
	}
	out := []results.Table{t}
	if k := s.App.Kind; k == "streams" || k == "video" || k == "reqresp" || k == "cbr" {
		out = append(out, streamTable(sums))
	}
	if s.LEO != nil {
		l := results.Table{Header: []string{"variant", "delivery delay p95 (ms)", "loss episodes / window cuts per run",
			"shared satellite: MPQUIC vs TCP (Mbit/s)", "recovery to the path BDP, p99 SS / CA (ms; samples, unrecovered)"}}
		for _, x := range sums {
			e := x.LEO
			if e == nil {
				continue
			}
			l.Rows = append(l.Rows, []string{x.Label, fmt.Sprintf("%.1f", x.DelayP95Ms), fmt.Sprintf("%.1f / %.1f", e.LossEvents, e.Reductions),
				fmt.Sprintf("%.2f vs %.2f", e.SharedMPMbps, e.SharedTCPMbps),
				fmt.Sprintf("%.0f (%d, %d) / %.0f (%d, %d)", e.RecoverySSP99, e.RecoverySSN, e.SSUnrecovered, e.RecoveryCAP99, e.RecoveryCAN, e.CAUnrecovered)})
		}
		out = append(out, l)
	}
	return out
}

// quantiles32 is stats.Quantiles of float32 samples.
func quantiles32(x []float32, qs ...float64) []float64 { return stats.Quantiles(toF64(x), qs...) }
