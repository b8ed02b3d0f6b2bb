package sched

import (
	"math"
	"time"
)

// LATE approximates the loss-aware throughput-estimation scheduler the
// thesis compares against (ch. 2 ref. [164]); the thesis gives no
// algorithm, so this is our reading of "a loss-aware throughput estimation
// model": each path's throughput is the Padhye et al. TCP model
//
//	B(p) = MSS / (RTT·√(2p/3) + RTO·min(1, 3√(3p/8))·p·(1+32p²)),
//
// capped by cwnd/RTT; the expected arrival of the next packet on a path is
// one-way delay + (bytes in flight + MSS)/B + the expected retransmission
// delay p/(1−p)·RTT. The next packet goes on the path with the earliest
// expected arrival; when that path's window is full, a path with space is
// used only if it beats waiting one RTT of the best path, else LATE waits.
type LATE struct{}

func (LATE) Name() string { return "late" }

func (LATE) Next(v *View) Decision {
	if v.Pending == 0 {
		return Decision{Wait, Head}
	}
	best, bestFree := -1, -1
	var aBest, aFree float64
	for i := range v.Paths {
		a := lateArrival(&v.Paths[i], v.PacketBytes)
		if best < 0 || a < aBest {
			best, aBest = i, a
		}
		if v.Paths[i].CanSend(v.PacketBytes) && (bestFree < 0 || a < aFree) {
			bestFree, aFree = i, a
		}
	}
	switch {
	case bestFree < 0:
		return Decision{Wait, Head}
	case bestFree == best:
		return Decision{best, Head}
	case aFree <= aBest+v.Paths[best].SRTT.Seconds():
		return Decision{bestFree, Head}
	}
	return Decision{Wait, Head}
}

// lateArrival is the expected time (s) until the next packet sent on p is
// delivered.
func lateArrival(p *PathView, mss int) float64 {
	rtt := max(p.SRTT, time.Microsecond).Seconds()
	rto := max(p.RTO, p.SRTT).Seconds()
	loss := min(p.LossRate, 0.5)
	thr := float64(max(p.Cwnd, mss)) / rtt // bytes/s
	if loss > 0 {
		padhye := float64(mss) / (rtt*math.Sqrt(2*loss/3) + rto*min(1, 3*math.Sqrt(3*loss/8))*loss*(1+32*loss*loss))
		thr = min(thr, padhye)
	}
	return rtt/2 + float64(p.InFlight+mss)/thr + loss/(1-loss)*rtt
}
