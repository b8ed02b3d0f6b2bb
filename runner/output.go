package runner

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hetquic/hetquic/internal/results"
)

// RoundsFile holds every round of every run. It is gzipped: the demo's
// 14 strategies × 20 seeds × 1000 rounds are 14 MB of CSV, 2.4 MB
// compressed, and pandas, R and zcat read it as it is. Every number the
// summary and figures are computed from is in it.
const RoundsFile = "rounds.csv.gz"

// WriteRounds writes RoundsFile into d: one line per round of every run,
// with
//
//	round, strategy, seed, path, size_bytes, tct_ms,
//	regret (cumulative pseudo-regret after the round), hit (1 on a best path).
func WriteRounds(d *results.Dir, r *Result) error {
	c, err := d.CreateCSV(RoundsFile, "round", "strategy", "seed", "path", "size_bytes", "tct_ms", "regret", "hit")
	if err != nil {
		return err
	}
	for _, runs := range r.Runs {
		for _, run := range runs {
			seed := strconv.FormatUint(run.Seed, 10)
			for t := range run.Path {
				hit := "0"
				if run.Hit[t] {
					hit = "1"
				}
				if err := c.Row(strconv.Itoa(t), run.Label, seed, r.Paths[run.Path[t]], strconv.Itoa(run.Size[t]),
					strconv.FormatFloat(run.TCTms[t], 'f', 4, 64), strconv.FormatFloat(run.Regret[t], 'f', 4, 64), hit); err != nil {
					c.Close()
					return err
				}
			}
		}
	}
	return c.Close()
}

// WriteAll writes RoundsFile, summary.json, the figures (PNG and SVG) and
// report.md into dir, and returns the files written.
func WriteAll(ctx context.Context, dir string, r *Result, s *Summary) ([]string, error) {
	d, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	if err := WriteRounds(d, r); err != nil {
		return nil, fmt.Errorf("write rounds: %w", err)
	}
	if err := d.WriteSummary(s); err != nil {
		return nil, err
	}
	figs, err := WriteFigures(ctx, dir, r)
	if err != nil {
		return nil, fmt.Errorf("write figures: %w", err)
	}
	for _, f := range figs {
		d.AddFigure(f)
	}
	if err := d.WriteReport(Report(r, s, figs)); err != nil {
		return nil, fmt.Errorf("write report: %w", err)
	}
	return d.Files(), nil
}
