package studies

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/sim"
)

// The Mathis validation's setting (sim/DESIGN.md, "Validation"): one path,
// 100 Mbit/s each way, 20 ms one-way delay, a 10 000-packet queue so that
// only the random loss drops packets, NewReno, goodput measured after the
// first tenth of the run and averaged over mathisSeeds.
const (
	mathisRateBps = 100e6
	mathisOneWay  = 20 * time.Millisecond
	mathisQueue   = 10_000
	mathisSeeds   = 3
	mathisPacket  = 1500 // bytes on the wire, the simulator's default (payload 1448)
	// MathisDuration is the simulated length of one run: long enough for
	// hundreds of loss episodes at 0.1 %, the lowest rate.
	MathisDuration = 150 * time.Second
)

// MathisLosses are the table's loss rates.
var MathisLosses = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05}

// MathisRow is one loss rate of the validation; goodputs in Mbit/s, means
// over the seeds.
type MathisRow struct {
	Loss float64
	// Measured is NewReno's goodput with an ACK per packet (b = 1, as the
	// formulas assume); MeasuredAck2 with RFC 9000's ACK every second
	// ack-eliciting packet.
	Measured, MeasuredAck2 float64
	// MathisBase is MSS/RTT·√(3/2)/√p with the base RTT (serialisation
	// included); MathisMean the same with the RTT the flow measured;
	// Padhye is Padhye et al.'s model with timeouts at the measured RTT.
	MathisBase, MathisMean, Padhye float64
}

// Mathis runs single-path NewReno at each of MathisLosses for dur
// (MathisDuration in the doc) and returns it beside the Mathis et al. and
// Padhye et al. throughput models.
func Mathis(ctx context.Context, dur time.Duration) ([]MathisRow, error) {
	var rows []MathisRow
	for _, p := range MathisLosses {
		r := MathisRow{Loss: p}
		for seed := uint64(1); seed <= mathisSeeds; seed++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m, rtt, payload, err := mathisRun(p, seed, dur, 1)
			if err != nil {
				return nil, err
			}
			m2, _, _, err := mathisRun(p, seed, dur, 2)
			if err != nil {
				return nil, err
			}
			r.Measured += m / mathisSeeds
			r.MeasuredAck2 += m2 / mathisSeeds
			r.MathisBase = mathisFormula(payload, mathisBaseRTT(), p)
			r.MathisMean += mathisFormula(payload, rtt, p) / mathisSeeds
			r.Padhye += padhye(payload, rtt, p) / mathisSeeds
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// mathisBaseRTT is the path's round trip without queueing: both
// propagation delays and one packet's serialisation.
func mathisBaseRTT() time.Duration {
	return 2*mathisOneWay + time.Duration(float64(mathisPacket*8)/mathisRateBps*float64(time.Second))
}

// mathisRun is one run: the goodput after the warm-up (Mbit/s), the mean
// latest RTT sampled every 10 ms after it, and the packets' payload.
func mathisRun(p float64, seed uint64, dur time.Duration, ackEvery int) (measured float64, meanRTT time.Duration, payload int, err error) {
	s := sim.New(seed)
	fwd := sim.NewLink(s, "fwd", sim.LinkParams{Delay: mathisOneWay, RateBps: mathisRateBps, Loss: p, QueuePkts: mathisQueue})
	rev := sim.NewLink(s, "rev", sim.LinkParams{Delay: mathisOneWay, RateBps: mathisRateBps, QueuePkts: mathisQueue})
	c, err := sim.NewConn(s, sim.ConnConfig{CC: "newreno", Scheduler: "single", RecvWindow: 1 << 40, AckEvery: ackEvery},
		[]sim.PathSpec{{Name: "p", Fwd: []*sim.Link{fwd}, Rev: []*sim.Link{rev}}})
	if err != nil {
		return 0, 0, 0, err
	}
	payload = c.Payload()
	warm := dur / 10
	var bytes int64
	c.Receiver().OnDeliver = func(d sim.Delivery) {
		if d.At >= warm {
			bytes += int64(payload)
		}
	}
	c.Write(1 << 40)
	var rttSum time.Duration
	var rttN int
	var sample func()
	sample = func() {
		if s.Now() >= warm {
			rttSum += c.PathView(0).LatestRTT
			rttN++
		}
		s.After(10*time.Millisecond, sample)
	}
	s.At(0, sample)
	s.Run(dur, 0, nil)
	if rttN == 0 {
		return 0, 0, 0, fmt.Errorf("mathis: run of %v has no RTT sample after its warm-up", dur)
	}
	meanRTT = rttSum / time.Duration(rttN)
	measured = float64(bytes) * 8 / (dur - warm).Seconds() / 1e6
	return measured, meanRTT, payload, nil
}

// mathisFormula is Mathis et al.'s MSS/RTT·√(3/2)/√p in Mbit/s.
func mathisFormula(payload int, rtt time.Duration, p float64) float64 {
	return float64(payload) * 8 / rtt.Seconds() * math.Sqrt(1.5) / math.Sqrt(p) / 1e6
}

// padhye is the Padhye et al. (SIGCOMM '98) throughput in Mbit/s with b = 1
// and a timeout T0 = 3·RTT: the Mathis formula plus the cost of timeouts,
// which matters from a few percent loss on.
func padhye(payload int, rtt time.Duration, p float64) float64 {
	r, t0 := rtt.Seconds(), 3*rtt.Seconds()
	den := r*math.Sqrt(2*p/3) + t0*min(1, 3*math.Sqrt(3*p/8))*p*(1+32*p*p)
	return float64(payload) * 8 / den / 1e6
}

// MathisTable is the validation as a report table.
func MathisTable(rows []MathisRow, dur time.Duration) results.Table {
	t := results.Table{
		Caption: fmt.Sprintf("NewReno over one %g Mbit/s path, %.2f ms base RTT, %d-packet queue, Bernoulli loss on the data direction; "+
			"%g s per run, goodput after the first tenth, mean of %d seeds; ACK every packet unless said (`hetquic sim mathis --md`).",
			mathisRateBps/1e6, stats.Ms(mathisBaseRTT()), mathisQueue, dur.Seconds(), mathisSeeds),
		Header: []string{"loss", "measured (Mbit/s)", "Mathis, base RTT", "ratio", "Mathis, mean RTT", "ratio",
			"Padhye (T0 = 3·RTT) ratio", "measured, ACK every 2nd packet", "vs every packet"},
	}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{
			fmt.Sprintf("%.1f %%", 100*r.Loss),
			fmt.Sprintf("%.3f", r.Measured),
			fmt.Sprintf("%.3f", r.MathisBase), fmt.Sprintf("%.3f", r.Measured/r.MathisBase),
			fmt.Sprintf("%.3f", r.MathisMean), fmt.Sprintf("%.3f", r.Measured/r.MathisMean),
			fmt.Sprintf("%.3f", r.Measured/r.Padhye),
			fmt.Sprintf("%.3f", r.MeasuredAck2), fmt.Sprintf("%+.1f %%", 100*(r.MeasuredAck2/r.Measured-1)),
		})
	}
	return t
}

// WriteMathisTable prints the table as Markdown.
func WriteMathisTable(w io.Writer, rows []MathisRow, dur time.Duration) error {
	return results.WriteTables(w, []results.Table{MathisTable(rows, dur)})
}
