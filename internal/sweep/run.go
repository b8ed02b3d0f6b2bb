package sweep

import (
	"context"
	"path/filepath"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/workpool"
)

// RunOwned carries out the runs of s that shard owns on the one runner and
// returns them by run number. run(ctx, point, r) is run r of point; it must
// depend on nothing else, which makes a run's result the same in any shard
// and with any number of workers (what lets shards merge bit for bit).
// describe, when not nil, describes a finished run for its progress line
// (workpool.Options.Describe).
func RunOwned[S, R any](ctx context.Context, s *Set[S], shard Shard, opt workpool.Options, describe func(*R) string,
	run func(ctx context.Context, point, r int) (*R, error)) (map[int]*R, error) {
	owned := s.Owned(shard)
	out := make([]*R, len(owned))
	if describe != nil {
		opt.Describe = func(j int) string { return describe(out[j]) }
	}
	err := workpool.Run(ctx, len(owned), opt, func(ctx context.Context, j int) error {
		pi, r := s.Locate(owned[j])
		res, err := run(ctx, pi, r)
		out[j] = res
		return err
	})
	if err != nil {
		return nil, err
	}
	runs := make(map[int]*R, len(owned))
	for j, k := range owned {
		runs[k] = out[j]
	}
	return runs, nil
}

// WriteSweep writes a sweep's results into dir and returns the files: each
// point's own summary (point(i), as the mode writes an unswept experiment's)
// in points/ID/summary.json, sum as summary.json, and o's sweep.csv, figure
// and report.md (WriteOutcome).
func WriteSweep(dir string, points []Point, point func(i int) results.Summary, sum results.Summary, o *Outcome) ([]string, error) {
	d, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	for i, p := range points {
		pd, err := results.Create(filepath.Join(dir, "points", p.ID))
		if err != nil {
			return nil, err
		}
		if err := pd.WriteSummary(point(i)); err != nil {
			return nil, err
		}
	}
	if err := d.WriteSummary(sum); err != nil {
		return nil, err
	}
	if err := WriteOutcome(d, o); err != nil {
		return nil, err
	}
	return d.Files(), nil
}
