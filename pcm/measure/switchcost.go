package measure

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
)

// SwitchCost is one cell of the switch-cost measurement: requests of
// SizeBytes over two identical paths of RTTms, made either on the path the
// connection is already on or right after switching to the other one, timed
// from the call to the last byte (a switch's probe included).
type SwitchCost struct {
	RTTms     float64 `json:"rtt_ms"`
	SizeBytes int     `json:"size_bytes"`
	Rebind    bool    `json:"rebind"`
	StayMs    float64 `json:"stay_median_ms"`
	SwitchMs  float64 `json:"switch_median_ms"`
	// CostMs is SwitchMs − StayMs: what moving costs the first request.
	CostMs float64 `json:"cost_ms"`
}

// MeasureSwitchCost runs the measurement for every RTT × size: per cell,
// `pairs` times the first request after a switch and a request on a path
// the connection has stayed on. Medians, so that a stray slow request does
// not decide.
func MeasureSwitchCost(ctx context.Context, rtts []float64, sizes []int, pairs int, rebind bool) ([]SwitchCost, error) {
	var out []SwitchCost
	for _, rtt := range rtts {
		for _, size := range sizes {
			c, err := measureCell(ctx, rtt, size, pairs, rebind)
			if err != nil {
				return nil, fmt.Errorf("rtt %g ms, %d bytes: %w", rtt, size, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func measureCell(ctx context.Context, rtt float64, size, pairs int, rebind bool) (SwitchCost, error) {
	_, c, closeAll, err := dialTwin(ctx, "switchcost", rtt, rebind)
	if err != nil {
		return SwitchCost{}, err
	}
	defer closeAll()
	target := "/bytes/" + strconv.Itoa(size)
	// The time of the whole call: what the application waits, the probe
	// and switch before the request included.
	get := func(p int) (float64, error) {
		start := time.Now()
		res, err := c.GetOn(ctx, p, target, io.Discard)
		if err != nil {
			return 0, err
		}
		if res.Path != p {
			return 0, fmt.Errorf("request went on path %d, not %d", res.Path, p)
		}
		return stats.Ms(time.Since(start)), nil
	}
	// Warm both paths (validated, congestion window grown) before measuring.
	for i := range 6 {
		if _, err := get(i % 2); err != nil {
			return SwitchCost{}, err
		}
	}
	// Each pair: switch and time the first request, then time the third
	// request on the same path (the second lets the new path settle).
	var stay, moved []float64
	cur := 0
	for range pairs {
		cur = 1 - cur
		for i := range 3 {
			t, err := get(cur)
			if err != nil {
				return SwitchCost{}, err
			}
			switch i {
			case 0:
				moved = append(moved, t)
			case 2:
				stay = append(stay, t)
			}
		}
	}
	sc2 := SwitchCost{RTTms: rtt, SizeBytes: size, Rebind: rebind, StayMs: stats.Median(stay), SwitchMs: stats.Median(moved)}
	sc2.CostMs = sc2.SwitchMs - sc2.StayMs
	return sc2, nil
}

// SwitchCostTable is the measurement as a table (Markdown where printed:
// what pcm/RESULTS.md's measured block shows).
func SwitchCostTable(cells []SwitchCost) results.Table {
	t := results.Table{Header: []string{"RTT ms", "size bytes", "mode", "stay ms (median)", "after switch ms (median)", "switch cost ms"}}
	for _, c := range cells {
		mode := "path API"
		if c.Rebind {
			mode = "rebind"
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%g", c.RTTms), fmt.Sprint(c.SizeBytes), mode,
			fmt.Sprintf("%.2f", c.StayMs), fmt.Sprintf("%.2f", c.SwitchMs), fmt.Sprintf("%+.2f", c.CostMs)})
	}
	return t
}
