package exp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	FCTP25S    float64 `json:"fct_p25_s"`
	FCTP50S    float64 `json:"fct_p50_s"`
	FCTP75S    float64 `json:"fct_p75_s"`
	FCTMeanS   float64 `json:"fct_mean_s"`
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
	WallPerRunS    float64 `json:"wall_per_run_s"`
	DelayP95Ms     float64 `json:"delivery_delay_p95_ms"`
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
}

// LEOSummary is what a LEO spec adds to a Summary.
type LEOSummary struct {
	LossEvents float64 `json:"loss_events_per_run"`       // congestion signals seen
	Reductions float64 `json:"window_reductions_per_run"` // signals acted on
	// Mean goodput over the bins where both subflows share a satellite:
	// MPQUIC's aggregate and the background TCP flows' on that satellite.
	SharedMPMbps  float64 `json:"shared_mpquic_mbps"`
	SharedTCPMbps float64 `json:"shared_tcp_mbps"`
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
		delay, reorder    []float32
		stream, app       []float32
		dl, missed        int
		sent, lost, drops uint64
		miss, segs        int
		events, wall      float64
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
		a.delay = append(a.delay, run.DelayMs...)
		a.reorder = append(a.reorder, run.ReorderMs...)
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
	}
	for i := range out {
		s, a := &out[i], accs[i]
		s.GoodputMbps, s.GoodputStdMbps = meanStd(a.gp)
		slices.Sort(a.fct)
		s.FCTP25S, s.FCTP50S, s.FCTP75S = quantile(a.fct, .25), quantile(a.fct, .5), quantile(a.fct, .75)
		s.FCTMeanS, _ = meanStd(a.fct)
		d := toF64(a.delay)
		slices.Sort(d)
		s.DelayP50Ms, s.DelayP90Ms, s.DelayP99Ms = quantile(d, .5), quantile(d, .9), quantile(d, .99)
		s.ReorderMeanMs, _ = meanStd(toF64(a.reorder))
		if a.sent > 0 {
			s.LossRate = float64(a.lost) / float64(a.sent)
			s.DropRate = float64(a.drops) / float64(a.sent)
		}
		if a.segs > 0 {
			s.SegmentsMissed = float64(a.miss) / float64(a.segs)
		}
		s.EventsPerRun, s.WallPerRunS = a.events/float64(s.Runs), a.wall/float64(s.Runs)
		s.DelayP95Ms = quantile(d, .95)
		st := toF64(a.stream)
		slices.Sort(st)
		s.StreamP50Ms, s.StreamP90Ms = quantile(st, .5), quantile(st, .9)
		ap := toF64(a.app)
		slices.Sort(ap)
		s.AppDelayP90Ms = quantile(ap, .9)
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
	ls.SharedMPMbps, ls.SharedTCPMbps = friendliness(runs)
	slices.Sort(ss)
	slices.Sort(ca)
	ls.RecoverySSP99, ls.RecoveryCAP99 = quantile(ss, .99), quantile(ca, .99)
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

func meanStd(x []float64) (float64, float64) {
	if len(x) == 0 {
		return 0, 0
	}
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	v := 0.0
	for _, e := range x {
		v += (e - m) * (e - m)
	}
	if len(x) > 1 {
		v /= float64(len(x) - 1)
	}
	return m, math.Sqrt(v)
}

// quantile of sorted x (linear interpolation); 0 for empty x.
func quantile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return 0
	}
	pos := q * float64(len(x)-1)
	lo := int(pos)
	if lo+1 >= len(x) {
		return x[len(x)-1]
	}
	return x[lo] + (pos-float64(lo))*(x[lo+1]-x[lo])
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

// WriteAll writes the per-run CSV files, summary.json, the figures (when
// figures is set) and report.md into dir and returns the files written.
// Drawing and PNG-encoding the figures is most of a short run's fixed cost
// (about 10 ms per figure, against 3 ms for the rest of the process), so
// scripted runs that only read summary.json leave them out.
func WriteAll(dir string, r *Result, figures bool) ([]string, error) {
	runs := filepath.Join(dir, "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, run := range r.Runs {
		base := filepath.Join(runs, runName(run))
		bin := r.Spec.BinMs / 1e3
		if err := writeCSV(base+"_goodput.csv", "t_s,goodput_mbps", len(run.Bins), func(i int) string {
			return fmt.Sprintf("%.3f,%.4f", float64(i)*bin, run.Bins[i])
		}); err != nil {
			return nil, err
		}
		if err := writeCSV(base+"_delay.csv", "chunk,delivery_delay_ms,reordering_delay_ms", len(run.DelayMs), func(i int) string {
			return fmt.Sprintf("%d,%.3f,%.3f", i, run.DelayMs[i], run.ReorderMs[i])
		}); err != nil {
			return nil, err
		}
		if err := writeCSV(base+"_flows.csv", "flow,src,dst,start_s,fct_s,bytes,paths", len(run.Flows), func(i int) string {
			f := run.Flows[i]
			return fmt.Sprintf("%d,%s,%s,%.3f,%.4f,%d,%s", i, f.Src, f.Dst, f.StartS, f.FCTS, f.Bytes, strings.Join(f.Paths, "|"))
		}); err != nil {
			return nil, err
		}
		files = append(files, base+"_goodput.csv", base+"_delay.csv", base+"_flows.csv")
		if l := run.LEO; l != nil && len(l.Cwnd) > 0 {
			if err := writeCSV(base+"_cwnd.csv", "t_s,shared,bg_tcp_mbps,cwnd_path0_pkts,cwnd_path1_pkts", len(l.Cwnd[0]), func(i int) string {
				c1 := float32(0)
				if len(l.Cwnd) > 1 {
					c1 = l.Cwnd[1][i]
				}
				return fmt.Sprintf("%.3f,%t,%.3f,%.1f,%.1f", float64(i+1)*bin, l.SharedBins[i], l.BgBins[i], l.Cwnd[0][i], c1)
			}); err != nil {
				return nil, err
			}
			files = append(files, base+"_cwnd.csv")
		}
	}
	sums := r.Summaries()
	js, err := json.MarshalIndent(struct {
		Name      string    `json:"name"`
		Seeds     int       `json:"seeds"`
		Summaries []Summary `json:"summaries"`
	}{r.Spec.Name, r.Spec.Seeds, sums}, "", "  ")
	if err != nil {
		return nil, err
	}
	sj := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(sj, append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	files = append(files, sj)
	var figs []string
	if figures {
		if figs, err = writeFigures(dir, r); err != nil {
			return nil, err
		}
		files = append(files, figs...)
	}
	rep := filepath.Join(dir, "report.md")
	if err := os.WriteFile(rep, []byte(report(r, sums, figs)), 0o644); err != nil {
		return nil, err
	}
	return append(files, rep), nil
}

func writeCSV(name, header string, n int, row func(int) string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, header)
	for i := 0; i < n; i++ {
		fmt.Fprintln(w, row(i))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// report renders report.md.
func report(r *Result, sums []Summary, figs []string) string {
	s := r.Spec
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", s.Name)
	if s.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(s.Description))
	}
	b.WriteString(Markdown(r, sums))
	for _, f := range figs {
		fmt.Fprintf(&b, "![%s](%s)\n\n", filepath.Base(f), filepath.Base(f))
	}
	return b.String()
}

// Markdown is the report's body without title and figures: the setting,
// the summary table(s) and the metric definitions (`hetquic sim run --md`,
// for docs).
func Markdown(r *Result, sums []Summary) string {
	s := r.Spec
	var b strings.Builder
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
	app := fmt.Sprintf("bulk %g MB", s.App.SizeMB)
	app = s.App.describe(app)
	fmt.Fprintf(&b, "Simulated with `hetquic sim run`: %s; %s; %d seed(s) from %d; at most %g s per run.\n\n", net, app, s.Seeds, s.Seed, s.DurationS)
	b.WriteString("| variant | paths | goodput (Mbit/s) | FCT p25/p50/p75 (s) | delivery delay p50/p90/p99 (ms) | mean reordering delay (ms) | loss | unfinished |")
	dash := s.App.Kind == "dash"
	if dash {
		b.WriteString(" segments late |")
	}
	b.WriteString("\n|---|---|---|---|---|---|---|---|")
	if dash {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, x := range sums {
		paths := "all"
		if x.Paths > 0 {
			paths = fmt.Sprint(x.Paths)
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f ± %.2f | %.2f / %.2f / %.2f | %.1f / %.1f / %.1f | %.2f | %.3f %% | %d |",
			x.Label, paths, x.GoodputMbps, x.GoodputStdMbps, x.FCTP25S, x.FCTP50S, x.FCTP75S,
			x.DelayP50Ms, x.DelayP90Ms, x.DelayP99Ms, x.ReorderMeanMs, 100*x.LossRate, x.Unfinished)
		if dash {
			fmt.Fprintf(&b, " %.1f %% |", 100*x.SegmentsMissed)
		}
		b.WriteString("\n")
	}
	if k := s.App.Kind; k == "streams" || k == "video" || k == "reqresp" || k == "cbr" {
		b.WriteString("\n" + StreamTable(sums))
	}
	if s.LEO != nil {
		b.WriteString("\n| variant | delivery delay p95 (ms) | loss episodes / window cuts per run | shared satellite: MPQUIC vs TCP (Mbit/s) | recovery to the path BDP, p99 SS / CA (ms; samples, unrecovered) |\n|---|---|---|---|---|\n")
		for _, x := range sums {
			l := x.LEO
			if l == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.1f | %.1f / %.1f | %.2f vs %.2f | %.0f (%d, %d) / %.0f (%d, %d) |\n", x.Label, x.DelayP95Ms,
				l.LossEvents, l.Reductions, l.SharedMPMbps, l.SharedTCPMbps, l.RecoverySSP99, l.RecoverySSN, l.SSUnrecovered, l.RecoveryCAP99, l.RecoveryCAN, l.CAUnrecovered)
		}
	}
	b.WriteString("\nDelivery delay: first transmission of a packet's data to its in-order delivery to the application; reordering delay: arrival to in-order delivery. Loss: packets the sender declared lost over packets sent.\n\n")
	return b.String()
}
