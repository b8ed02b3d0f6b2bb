package layeredvideo

import (
	"github.com/hetquic/hetquic/fec"
	"github.com/hetquic/hetquic/sim"
)

// leapCtl is LEAP at the sender of one session: a capacity estimate per
// path. Each block's packets go out as one stream per path, pinned to it
// (sim.StreamOpts.Pinned): the allocation, not a scheduler, decides the
// path of every coded packet.
type leapCtl struct {
	est    []capEstimate
	target float64
}

func newLeap(nPaths int, target float64) *leapCtl {
	return &leapCtl{est: make([]capEstimate, nPaths), target: target}
}

// plan samples each path's capacity (the transport's delivery-rate
// estimate, cwnd·(1 − loss)/SRTT in packets/s — what the sender measures
// of a path each frame) and allocates the frame's layers in priority
// order, BL first: each layer is one block planned for the target on what
// the earlier layers left of each path's forecast, and of its rate — the
// forecast mean, the subflow's rate in LEAP's congestion control. It returns each layer's
// block and its packets' paths by stream offset.
func (l *leapCtl) plan(c *sim.Conn, ks [3]int) ([3]fec.Block, [3][]int) {
	pay := float64(c.Payload())
	fs := make([]pathForecast, len(l.est))
	rate := make([]int, len(l.est))
	for i := range l.est {
		pv := c.PathView(i)
		l.est[i].observe(float64(pv.Cwnd) * (1 - pv.LossRate) / pv.SRTT.Seconds() / pay)
		owd := pv.SRTT / 2
		if pv.HasRTT {
			owd = pv.MinRTT / 2
		}
		fs[i] = forecast(l.est[i], Deadline.Seconds(), owd.Seconds(), float64(pv.InFlight)/pay, pv.LossRate)
		// The subflow's rate is the forecast mean: a frame interval's worth.
		rate[i] = int(l.est[i].mean * FrameInterval.Seconds())
	}
	var blocks [3]fec.Block
	var paths [3][]int
	base := make([]int, len(fs))
	limit := make([]int, len(fs))
	for ly, k := range ks {
		for i := range limit {
			limit[i] = max(rate[i]-base[i], 0)
		}
		alloc, _ := allocate(k, fs, base, limit, l.target, fec.MaxShards)
		paths[ly] = assignOffsets(alloc, fs, base)
		blocks[ly] = fec.Block{K: k, N: len(paths[ly])}
		for i, n := range alloc {
			base[i] += n
		}
	}
	return blocks, paths
}
