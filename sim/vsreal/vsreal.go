// Package vsreal validates the simulator's transport against real QUIC:
// the same download over the same path, on quic-go through hetquic's
// emulator (pcm/measure's bench) and in the simulator (sim/runner), side by
// side. Both sides run the one link model (internal/linkmodel) with the same
// random streams, and TestLinkDriversAgree checks that the two drivers give
// the same per-packet drops and delays, so what differs here is the
// transport. It lives beside sim, not in experiment, so an offline run links
// neither quic-go nor the simulator.
package vsreal

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/pcm/measure"
	"github.com/hetquic/hetquic/scenario"
	simrunner "github.com/hetquic/hetquic/sim/runner"
)

// SimVsReal is one point of the simulator's validation against real QUIC:
// the completion time of one download of SizeBytes over one path
// of RTTms and downstream Loss at RateMbps, on quic-go through the emulator
// and in the simulator.
type SimVsReal struct {
	RTTms     float64 `json:"rtt_ms"`
	Loss      float64 `json:"loss"`
	SizeBytes int     `json:"size_bytes"`
	RealMs    float64 `json:"real_median_ms"`
	SimMs     float64 `json:"sim_median_ms"`
}

// Point is one path setting of the validation.
type Point struct{ RTTms, Loss float64 }

// CompareSimReal measures every point × size `trials` times each way and
// reports medians. The real side is pcm on one path through the relay; the
// simulator runs what quic-go v0.65.0 runs there: its Reno (cc "quicgo":
// β = 0.7, 40960-byte initial window, hybrid slow start; quic-go's default
// controller is Reno, not Cubic) with 1441-byte packets, the datagram size
// quic-go's path MTU discovery settles on through the relay (from 1280
// bytes, within ~20 RTTs).
func CompareSimReal(ctx context.Context, points []Point, sizes []int, rateMbps float64, trials int) ([]SimVsReal, error) {
	dir, err := os.MkdirTemp("", "hetquic-simvsreal")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var out []SimVsReal
	for _, pt := range points {
		link := scenario.Link{DelayMs: pt.RTTms / 2, RateMbps: rateMbps, QueuePackets: 1000}
		down := link
		down.Loss = pt.Loss
		sc := &scenario.Scenario{Name: "validation", Paths: []scenario.Path{{Name: "p", Up: link, Down: down}}}
		real, err := realMedians(ctx, sc, sizes, trials)
		if err != nil {
			return nil, fmt.Errorf("real, rtt %g ms, loss %g: %w", pt.RTTms, pt.Loss, err)
		}
		for i, size := range sizes {
			sim, err := simMedian(ctx, dir, sc, size, trials)
			if err != nil {
				return nil, fmt.Errorf("sim, rtt %g ms, loss %g, %d bytes: %w", pt.RTTms, pt.Loss, size, err)
			}
			out = append(out, SimVsReal{RTTms: pt.RTTms, Loss: pt.Loss, SizeBytes: size, RealMs: real[i], SimMs: sim})
		}
	}
	return out, nil
}

func realMedians(ctx context.Context, sc *scenario.Scenario, sizes []int, trials int) ([]float64, error) {
	b, err := measure.NewBench(sc, 1)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var out []float64
	for _, size := range sizes {
		var ts []float64
		for range trials {
			// A fresh connection per download: the simulator's flow
			// starts from an initial window too.
			c, err := b.Dial(ctx, false)
			if err != nil {
				return nil, err
			}
			res, err := c.GetOn(ctx, 0, "/bytes/"+strconv.Itoa(size), io.Discard)
			c.Close()
			if err != nil {
				return nil, err
			}
			ts = append(ts, float64(res.TCT())/float64(time.Millisecond))
		}
		out = append(out, stats.Median(ts))
	}
	return out, nil
}

// quicGoPacketBytes is the UDP payload of quic-go v0.65.0's data packets once
// its path MTU discovery has converged through the emulator's relay (its
// qlog: mtu_updated 1280 → 1366 → 1409 → 1430 → 1441, done).
const quicGoPacketBytes = 1441

// simMedian writes the scenario and a one-variant sim experiment to dir,
// runs it, and returns the median flow completion time in ms.
func simMedian(ctx context.Context, dir string, sc *scenario.Scenario, size, trials int) (float64, error) {
	p, l := sc.Paths[0], sc.Paths[0].Down
	scen := fmt.Sprintf("name: validation\npaths:\n  - name: p\n    up: {delay_ms: %g, rate_mbps: %g, queue_packets: %d}\n    down: {delay_ms: %g, rate_mbps: %g, queue_packets: %d, loss: %g}\n",
		p.Up.DelayMs, p.Up.RateMbps, p.Up.QueuePackets, l.DelayMs, l.RateMbps, l.QueuePackets, l.Loss)
	spec := fmt.Sprintf("name: validation\nscenario: scenario.yaml\nduration_s: 300\nseeds: %d\ntransport: {packet_bytes: %d}\napp: {kind: bulk, size_mb: %g}\nvariants:\n  - {label: sim, scheduler: minrtt, cc: quicgo}\n",
		trials, quicGoPacketBytes, float64(size)/1e6)
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(scen), 0o644); err != nil {
		return 0, err
	}
	file := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		return 0, err
	}
	s, err := simrunner.Load(file)
	if err != nil {
		return 0, err
	}
	res, err := simrunner.Run(ctx, s, 0, nil)
	if err != nil {
		return 0, err
	}
	sums := res.Summaries()
	if len(sums) != 1 {
		return 0, fmt.Errorf("%d summaries", len(sums))
	}
	return sums[0].FCTP50S * 1000, nil
}

// SimVsRealTable is the comparison as a report table.
func SimVsRealTable(rows []SimVsReal, rateMbps float64, trials int) results.Table {
	t := results.Table{
		Caption: fmt.Sprintf("One %g Mbit/s path, 1000-packet queue, loss on the data direction; median completion time of %d downloads each way: "+
			"quic-go v0.65.0 through the emulator's relay (loss seed 1) and the simulator (seeds 1–%d).", rateMbps, trials, trials),
		Header: []string{"RTT (ms)", "loss", "size (MB)", "real (ms)", "sim (ms)", "sim / real"},
	}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{
			fmt.Sprintf("%g", r.RTTms), fmt.Sprintf("%g %%", 100*r.Loss), fmt.Sprintf("%g", float64(r.SizeBytes)/1e6),
			fmt.Sprintf("%.0f", r.RealMs), fmt.Sprintf("%.0f", r.SimMs), fmt.Sprintf("%.2f", r.SimMs/r.RealMs),
		})
	}
	return t
}

// WriteSimVsRealTable prints the comparison as aligned text.
func WriteSimVsRealTable(w io.Writer, rows []SimVsReal) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RTT ms\tloss\tsize MB\treal ms (median)\tsim ms (median)\tsim / real\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%g\t%g\t%g\t%.1f\t%.1f\t%.3f\t\n", r.RTTms, r.Loss, float64(r.SizeBytes)/1e6, r.RealMs, r.SimMs, r.SimMs/r.RealMs)
	}
	return tw.Flush()
}
